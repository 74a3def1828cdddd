// Errors over HTTP+JSON (spec §11.6, v1.0.1 table of §5.2): every error the binding can
// answer, with its HTTP status and the exact google.rpc.Status body; unknown routes under
// the binding's paths get that body too, other paths keep the application's own 404.
import Fastify from 'fastify'
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { a2aWebSocket, MemoryTaskStore } from '../lib/index.js'
import { A2A_JSON_UTF8, rest, restResult } from './helpers/rest.js'
import { startServer, userMessage, V1 } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const base = server.endpoint
const errorInfo = (reason: string, metadata?: Record<string, string>) =>
  ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org', ...(metadata === undefined ? {} : { metadata }) })
const completedTask = async () => (await restResult(base, 'POST', '/message:send', { body: { message: userMessage('done') } })).task

t.test('TaskNotFound → 404 NOT_FOUND', async t => {
  const reply = await rest(base, 'GET', '/tasks/missing')
  t.equal(reply.status, 404)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  t.same(reply.body, { error: { code: 404, status: 'NOT_FOUND', message: 'Task not found: missing', details: [errorInfo('TASK_NOT_FOUND', { taskId: 'missing' })] } })
})

t.test('TaskNotCancelable → 400 FAILED_PRECONDITION', async t => {
  const task = await completedTask()
  const reply = await rest(base, 'POST', `/tasks/${task.id}:cancel`)
  t.equal(reply.status, 400)
  t.same(reply.body, {
    error: {
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: `Task cannot be canceled: ${task.id}`,
      details: [errorInfo('TASK_NOT_CANCELABLE', { taskId: task.id, state: 'TASK_STATE_COMPLETED' })]
    }
  })
})

t.test('UnsupportedOperation → 400 FAILED_PRECONDITION: a message to a terminal task, streaming not declared', async t => {
  const task = await completedTask()
  const reply = await rest(base, 'POST', '/message:send', { body: { message: userMessage('again', { taskId: task.id }) } })
  t.equal(reply.status, 400)
  t.same(reply.body, {
    error: {
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: `Unsupported operation: cannot send a message to task ${task.id} in terminal state TASK_STATE_COMPLETED`,
      details: [errorInfo('UNSUPPORTED_OPERATION', { taskId: task.id, state: 'TASK_STATE_COMPLETED' })]
    }
  })
  const noStreaming = await startServer({ card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, streaming: false } } })
  t.teardown(() => noStreaming.close())
  const stream = await rest(noStreaming.endpoint, 'POST', '/message:stream', { body: { message: userMessage('x') } })
  t.equal(stream.status, 400)
  t.same(stream.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Unsupported operation: streaming is not supported', details: [errorInfo('UNSUPPORTED_OPERATION')] } })
})

t.test('PushNotificationNotSupported → 400 FAILED_PRECONDITION', async t => {
  const noPush = await startServer({ card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, pushNotifications: false } } })
  t.teardown(() => noPush.close())
  const reply = await rest(noPush.endpoint, 'POST', '/tasks/any/pushNotificationConfigs', { body: { url: 'https://hooks.example.com/a' } })
  t.equal(reply.status, 400)
  t.same(reply.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Push notifications are not supported', details: [errorInfo('PUSH_NOTIFICATION_NOT_SUPPORTED')] } })
})

t.test('ContentTypeNotSupported → 400 INVALID_ARGUMENT', async t => {
  const reply = await rest(base, 'POST', '/message:send', { body: { message: userMessage('x', { parts: [{ url: 'https://example.com/a.png', mediaType: 'image/png' }] }) } })
  t.equal(reply.status, 400)
  t.same(reply.body, {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'Content type not supported: image/png',
      details: [errorInfo('CONTENT_TYPE_NOT_SUPPORTED', { mediaType: 'image/png', part: 'message.parts[0]' })]
    }
  })
})

t.test('the extended card: 400 EXTENDED_AGENT_CARD_NOT_CONFIGURED, 400 UNSUPPORTED_OPERATION when not declared', async t => {
  const notConfigured = await startServer({ extendedCard: undefined })
  t.teardown(() => notConfigured.close())
  const reply = await rest(notConfigured.endpoint, 'GET', '/extendedAgentCard')
  t.equal(reply.status, 400)
  t.same(reply.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Extended agent card is not configured', details: [errorInfo('EXTENDED_AGENT_CARD_NOT_CONFIGURED')] } })
  const notDeclared = await startServer({ card: { ...conformanceCard, capabilities: { streaming: true } } })
  t.teardown(() => notDeclared.close())
  const refused = await rest(notDeclared.endpoint, 'GET', '/extendedAgentCard')
  t.equal(refused.status, 400)
  t.same(refused.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Unsupported operation: the extended agent card is not supported', details: [errorInfo('UNSUPPORTED_OPERATION')] } })
})

t.test('a method the card does not declare is refused before its params and its version are checked, the extended card as push and streaming', async t => {
  const bare = await startServer({ card: { ...conformanceCard, capabilities: {} } })
  t.teardown(() => bare.close())
  const noVersion = { headers: {} }
  const card = await rest(bare.endpoint, 'GET', '/extendedAgentCard', noVersion)
  t.equal(card.status, 400)
  t.same(card.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Unsupported operation: the extended agent card is not supported', details: [errorInfo('UNSUPPORTED_OPERATION')] } })
  const json = { headers: { 'content-type': 'application/json' } }
  const stream = await rest(bare.endpoint, 'POST', '/message:stream', { ...json, body: { message: 'not a message' } })
  t.same(stream.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Unsupported operation: streaming is not supported', details: [errorInfo('UNSUPPORTED_OPERATION')] } })
  const push = await rest(bare.endpoint, 'POST', '/tasks/any/pushNotificationConfigs', { ...json, body: { url: 42 } })
  t.same(push.body, { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'Push notifications are not supported', details: [errorInfo('PUSH_NOTIFICATION_NOT_SUPPORTED')] } })
})

t.test('VersionNotSupported → 400 FAILED_PRECONDITION, a missing A2A-Version meaning 0.3', async t => {
  const missing = await rest(base, 'GET', '/tasks/x', { headers: {} })
  t.equal(missing.status, 400)
  t.same(missing.body, {
    error: {
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: 'A2A version 0.3 (no A2A-Version was sent) is not supported; supported versions: 1.0',
      details: [errorInfo('VERSION_NOT_SUPPORTED', { requestedVersion: '0.3', supportedVersions: '1.0' })]
    }
  })
  const wrong = await rest(base, 'GET', '/tasks/x', { headers: { 'a2a-version': '2.0' } })
  t.equal(wrong.status, 400)
  t.same(wrong.body.error.details, [errorInfo('VERSION_NOT_SUPPORTED', { requestedVersion: '2.0', supportedVersions: '1.0' })])
})

t.test('invalid params → 400 INVALID_ARGUMENT with a BadRequest naming each field', async t => {
  const reply = await rest(base, 'POST', '/message:send', { body: { message: { messageId: 'm', role: 'user', parts: [] } } })
  t.equal(reply.status, 400)
  t.same(reply.body, {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'Invalid parameters: message.role must be equal to one of the allowed values; message.parts must not have fewer than 1 items',
      details: [{
        '@type': 'type.googleapis.com/google.rpc.BadRequest',
        fieldViolations: [
          { field: 'message.role', description: 'must be equal to one of the allowed values' },
          { field: 'message.parts', description: 'must not have fewer than 1 items' }
        ]
      }]
    }
  })
  const noBody = await rest(base, 'POST', '/message:send')
  t.same(noBody.body.error.details[0].fieldViolations, [{ field: 'message', description: 'is required' }])
  const emptyId = await rest(base, 'GET', '/tasks/')
  t.same(emptyId.body.error.details[0].fieldViolations, [{ field: 'id', description: 'is required' }], 'an empty path field is absent')
  const createWithoutUrl = await rest(base, 'POST', '/tasks/t/pushNotificationConfigs', { body: {} })
  t.same(createWithoutUrl.body.error.details[0].fieldViolations, [{ field: 'url', description: 'is required' }])
})

t.test('a body that is not a JSON object → 400 INVALID_ARGUMENT', async t => {
  for (const body of ['[]', 'null', '"text"', '42']) {
    const reply = await rest(base, 'POST', '/message:send', { body, headers: { ...V1, 'content-type': 'application/json' } })
    t.equal(reply.status, 400, body)
    t.same(reply.body, {
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: 'Invalid parameters: the request body must be a JSON object',
        details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: '', description: 'the request body must be a JSON object' }] }]
      }
    }, body)
  }
})

t.test('bad JSON → 400 INVALID_ARGUMENT, and the next request is served', async t => {
  const reply = await rest(base, 'POST', '/message:send', { body: '{"message":', headers: { ...V1, 'content-type': 'application/json' } })
  t.equal(reply.status, 400)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  t.same(reply.body, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload' } })
  t.equal((await completedTask()).status.state, 'TASK_STATE_COMPLETED')
})

t.test('a body over the limit → 413 with the error body', async t => {
  const small = await startServer({ bodyLimit: 1024 })
  t.teardown(() => small.close())
  const reply = await rest(small.endpoint, 'POST', '/message:send', { body: { message: userMessage('x'.repeat(2000)) } })
  t.equal(reply.status, 413)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  t.same(reply.body, { error: { code: 413, status: 'INVALID_ARGUMENT', message: 'Request payload is larger than 1024 bytes' } })
  t.equal((await restResult(small.endpoint, 'POST', '/message:send', { body: { message: userMessage('small') } })).task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('InvalidAgentResponse → 500 INTERNAL', async t => {
  const silent = await startServer({ executor: { async execute () {} } })
  t.teardown(() => silent.close())
  const reply = await rest(silent.endpoint, 'POST', '/message:send', { body: { message: userMessage('x') } })
  t.equal(reply.status, 500)
  t.same(reply.body, {
    error: {
      code: 500,
      status: 'INTERNAL',
      message: 'Invalid agent response: the executor returned without a task or a message',
      details: [errorInfo('INVALID_AGENT_RESPONSE')]
    }
  })
})

t.test('an unexpected failure → 500 INTERNAL without its cause', async t => {
  class BrokenStore extends MemoryTaskStore {
    override async get (): Promise<never> { throw new Error('the disk is on fire') }
  }
  const broken = await startServer({ taskStore: new BrokenStore() })
  t.teardown(() => broken.close())
  const reply = await rest(broken.endpoint, 'GET', '/tasks/x')
  t.equal(reply.status, 500)
  t.same(reply.body, { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } })
})

const notFound = (method: string, path: string) => ({ error: { code: 404, status: 'NOT_FOUND', message: `Method not found: ${method} ${path}` } })

t.test('an unknown route among the binding\'s paths → 404 with the error body', async t => {
  const cases: Array<[string, string]> = [
    ['GET', '/tasks/a/b'], ['DELETE', '/tasks/x'], ['POST', '/tasks'], ['PUT', '/message:send'], ['GET', '/message:send'],
    ['POST', '/message:sendx'], ['PATCH', '/tasks/x:cancel'], ['POST', '/extendedAgentCard'], ['GET', '/extendedAgentCard/x'],
    ['GET', '/acme/tasks/a/b'], ['DELETE', '/acme/message:stream'], ['PUT', '/acme/tasks']
  ]
  for (const [method, path] of cases) {
    const reply = await rest(base, method, path)
    t.equal(reply.status, 404, `${method} ${path}`)
    t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
    t.same(reply.body, notFound(method, path), `${method} ${path}`)
  }
  const withBody = await rest(base, 'POST', '/tasks/a/b?x=1', { body: 'not json', headers: { ...V1, 'content-type': 'text/plain' } })
  t.same([withBody.status, withBody.body], [404, notFound('POST', '/tasks/a/b')], 'the route is checked before the body')
})

t.test('at the root, other paths keep the application\'s own 404', async t => {
  const reply = await rest(base, 'GET', '/nothing/here')
  t.equal(reply.status, 404)
  t.same(reply.body, { message: 'Route GET:/nothing/here not found', error: 'Not Found', statusCode: 404 }, 'Fastify\'s default')

  const app = Fastify()
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ mine: true }))
  await app.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  t.teardown(() => app.close())
  t.same((await app.inject('/nothing')).json(), { mine: true }, 'the application\'s handler')
  const a2a = await app.inject({ method: 'GET', url: '/tasks/a/b', headers: V1 })
  t.same([a2a.statusCode, a2a.json()], [404, notFound('GET', '/tasks/a/b')])
})

t.test('under a prefix every unknown route of the prefix → 404 with the error body', async t => {
  const prefixed = await startServer({ prefix: '/a2a' })
  t.teardown(() => prefixed.close())
  for (const [method, path] of [['GET', '/a2a/anything'], ['PUT', '/a2a'], ['POST', '/a2a/tasks'], ['GET', '/a2a/acme/x/y'], ['GET', '/a2a/.well-known/agent-card.json']]) {
    const reply = await rest(prefixed.origin, method as string, path as string)
    t.same([reply.status, reply.body], [404, notFound(method as string, path as string)], `${method} ${path}`)
  }
  const outside = await rest(prefixed.origin, 'GET', '/tasks/x')
  t.same(outside.body, { message: 'Route GET:/tasks/x not found', error: 'Not Found', statusCode: 404 }, 'outside the prefix: the application\'s 404')
  t.equal((await rest(prefixed.endpoint, 'GET', '/tasks/x')).body.error.status, 'NOT_FOUND')
})
