// The HTTP+JSON routes (spec §11.3): every operation at its path, bodies minus the
// path-bound fields, the `:verb` suffixes kept apart from task ids, Delete answering {},
// lists carrying nextPageToken, and the binding in the agent card.
import t from 'tap'
import { conformanceCard } from '../examples/agent.js'
import { A2A_JSON_UTF8, rest, restResult, restStream } from './helpers/rest.js'
import { eventually, startServer, userMessage, V1 } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const base = server.endpoint
const send = async (text: string, extra = {}) => (await restResult(base, 'POST', '/message:send', { body: { message: userMessage(text, extra) } })).task

/** A held task once it is working, so that its state is known. */
async function heldTask () {
  const { task } = await restResult(base, 'POST', '/message:send', { body: { message: userMessage('hold'), configuration: { returnImmediately: true } } })
  await eventually(async () => (await restResult(base, 'GET', `/tasks/${task.id}`)).status.state === 'TASK_STATE_WORKING')
  return task
}

t.test('the card lists HTTP+JSON right after JSONRPC, at the base URL', async t => {
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.same(card.supportedInterfaces.slice(0, 2), [
    { url: server.origin, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: server.origin, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }
  ])
  const prefixed = await startServer({ prefix: '/a2a', publicUrl: 'https://agent.example.com' })
  t.teardown(() => prefixed.close())
  const prefixedCard = await (await fetch(`${prefixed.origin}/.well-known/agent-card.json`)).json()
  t.same(prefixedCard.supportedInterfaces[1], { url: 'https://agent.example.com/a2a', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' })
  t.equal((await rest(prefixed.endpoint, 'GET', '/tasks/missing')).status, 404, 'the routes are under the prefix')
  t.equal((await rest(prefixed.origin, 'GET', '/tasks')).status, 404, 'and not beside it')
})

t.test('POST /message:send answers the SendMessageResponse', async t => {
  const message = userMessage('hello')
  const reply = await rest(base, 'POST', '/message:send', { body: { message } })
  t.equal(reply.status, 200)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  const { task } = reply.body
  t.same(reply.body, {
    task: {
      id: task.id,
      contextId: task.contextId,
      status: { state: 'TASK_STATE_COMPLETED', timestamp: task.status.timestamp },
      artifacts: [{ artifactId: 'echo', parts: [{ text: 'hello' }] }],
      history: [{ ...message, taskId: task.id, contextId: task.contextId }]
    }
  })
  const direct = await restResult(base, 'POST', '/message:send', { body: { message: userMessage('message hi') } })
  t.same(direct, { message: { messageId: direct.message.messageId, contextId: direct.message.contextId, role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } })
})

t.test('POST /message:send honours the configuration in the body', async t => {
  const { task } = await restResult(base, 'POST', '/message:send', { body: { message: userMessage('echo'), configuration: { historyLength: 0 } } })
  t.equal(task.status.state, 'TASK_STATE_COMPLETED')
  t.notOk('history' in task, 'historyLength 0 leaves history out')
})

t.test('GET /tasks/{id} answers the bare task; historyLength from the query', async t => {
  const task = await send('fetch me')
  const reply = await rest(base, 'GET', `/tasks/${task.id}`)
  t.equal(reply.status, 200)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  t.same(reply.body, task)
  const { history: _history, ...withoutHistory } = task
  t.same(await restResult(base, 'GET', `/tasks/${task.id}?historyLength=0`), withoutHistory)
})

t.test('the :verb suffixes are literal and GET /tasks/{id} does not swallow them', async t => {
  const task = await heldTask()
  const getCancel = await rest(base, 'GET', `/tasks/${task.id}:cancel`)
  t.equal(getCancel.status, 404, 'GET on :cancel is a task id with a colon, not a cancel')
  t.same(getCancel.body.error.details[0].metadata, { taskId: `${task.id}:cancel` })
  const subscription = restStream(base, 'GET', `/tasks/${task.id}:subscribe`)
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 1)
  const canceled = await rest(base, 'POST', `/tasks/${task.id}:cancel`)
  t.equal(canceled.status, 200)
  t.equal(canceled.body.id, task.id)
  t.equal(canceled.body.status.state, 'TASK_STATE_CANCELED')
  const subscribed = await subscription
  t.equal(subscribed.status, 200, 'GET on :subscribe is the subscription')
  t.same(subscribed.events.map(e => e.data.task?.status.state ?? e.data.statusUpdate?.status.state), ['TASK_STATE_WORKING', 'TASK_STATE_CANCELED'])
  // A colon inside a task id stays in the id; only the last `:subscribe` is the verb.
  const colonId = await rest(base, 'GET', '/tasks/a:b:subscribe')
  t.equal(colonId.status, 404)
  t.same(colonId.body.error.details[0].metadata, { taskId: 'a:b' })
  t.same((await rest(base, 'GET', '/tasks/a:b')).body.error.details[0].metadata, { taskId: 'a:b' })
})

t.test('POST /tasks/{id}:cancel takes no body, an empty JSON object, or metadata', async t => {
  for (const options of [{}, { body: {} }, { body: { metadata: { why: 'test' } } }, { body: '', headers: { ...V1, 'content-type': 'application/json' } }]) {
    const task = await heldTask()
    const canceled = await restResult(base, 'POST', `/tasks/${task.id}:cancel`, options)
    t.equal(canceled.status.state, 'TASK_STATE_CANCELED', JSON.stringify(options))
  }
})

t.test('GET /tasks lists, filtered and paged, with nextPageToken always present', async t => {
  const contextId = `ctx-rest-list-${Date.now()}`
  const ids = [(await send('one', { contextId })).id, (await send('two', { contextId })).id, (await send('three', { contextId })).id]
  const first = await restResult(base, 'GET', `/tasks?contextId=${contextId}&pageSize=2`)
  t.equal(first.tasks.length, 2)
  t.not(first.nextPageToken, '')
  t.same([first.pageSize, first.totalSize], [2, 3])
  const second = await rest(base, 'GET', `/tasks?contextId=${contextId}&pageSize=2&pageToken=${encodeURIComponent(first.nextPageToken)}`)
  t.equal(second.headers.get('content-type'), A2A_JSON_UTF8)
  t.equal(second.body.tasks.length, 1)
  t.equal(second.body.nextPageToken, '', 'present and empty on the last page')
  t.same([...first.tasks, ...second.body.tasks].map((task: any) => task.id).sort(), [...ids].sort())
  t.ok([...first.tasks, ...second.body.tasks].every((task: any) => !('artifacts' in task)), 'artifacts left out by default')
  t.same(await restResult(base, 'GET', '/tasks?contextId=no-such-context'), { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 })
})

t.test('push notification configs: create from the body with taskId from the path, get, list, delete', async t => {
  const task = await send('input')
  const path = `/tasks/${task.id}/pushNotificationConfigs`
  const created = await rest(base, 'POST', path, { body: { url: 'https://hooks.example.com/a', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' } } })
  t.equal(created.status, 200)
  t.equal(created.headers.get('content-type'), A2A_JSON_UTF8)
  t.same(created.body, { id: created.body.id, taskId: task.id, url: 'https://hooks.example.com/a', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' } })
  const named = await restResult(base, 'POST', path, { body: { id: 'mine', taskId: 'another-task', url: 'https://hooks.example.com/b' } })
  t.same(named, { id: 'mine', taskId: task.id, url: 'https://hooks.example.com/b' }, 'the path wins over a taskId in the body')
  t.same(await restResult(base, 'GET', `${path}/mine`), named)
  t.same(await restResult(base, 'GET', path), { configs: [created.body, named], nextPageToken: '' })
  const page = await restResult(base, 'GET', `${path}?pageSize=1`)
  t.same(page.configs, [created.body])
  t.not(page.nextPageToken, '')
  t.same(await restResult(base, 'GET', `${path}?pageSize=1&pageToken=${encodeURIComponent(page.nextPageToken)}`), { configs: [named], nextPageToken: '' })
  const deleted = await rest(base, 'DELETE', `${path}/mine`)
  t.equal(deleted.status, 200)
  t.equal(deleted.headers.get('content-type'), A2A_JSON_UTF8)
  t.equal(deleted.text, '{}')
  t.equal((await rest(base, 'DELETE', `${path}/mine`)).text, '{}', 'delete is idempotent')
  t.equal((await rest(base, 'GET', `${path}/mine`)).status, 404)
  t.same(await restResult(base, 'GET', path), { configs: [created.body], nextPageToken: '' })
})

t.test('GET /extendedAgentCard answers the extended card', async t => {
  const reply = await rest(base, 'GET', '/extendedAgentCard')
  t.equal(reply.status, 200)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  const publicCard = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.same(reply.body, publicCard)
  t.equal(reply.body.name, conformanceCard.name)
})

t.test('GET /extendedAgentCard: kept for the caller alone, revalidated by its ETag', async t => {
  const reply = await rest(base, 'GET', '/extendedAgentCard')
  t.equal(reply.headers.get('cache-control'), 'private, no-cache', 'it may differ per caller: no shared cache, no reuse unchecked')
  const etag = reply.headers.get('etag')
  t.match(etag, /^"[A-Za-z0-9_-]{27}"$/)
  const again = await rest(base, 'GET', '/extendedAgentCard', { headers: { ...V1, 'if-none-match': `W/"other", ${etag}` } })
  t.equal(again.status, 304)
  t.equal(again.text, '')
  t.equal(again.headers.get('etag'), etag)
  t.equal(again.headers.get('cache-control'), 'private, no-cache')
  const changed = await rest(base, 'GET', '/extendedAgentCard', { headers: { ...V1, 'if-none-match': '"other"' } })
  t.equal(changed.status, 200, 'another ETag gets the card')
  t.same(changed.body, reply.body)
})

t.test('the service parameters reach the executor, with the request path as :path', async t => {
  const task = (await restResult(base, 'POST', '/message:send?A2A-Version=1.0', {
    body: { message: userMessage('params') }, headers: { ...V1, 'content-type': 'application/json', 'x-trace': 'abc' }
  })).task
  const seen = task.artifacts[0].parts[0].data
  t.equal(seen[':path'], '/message:send')
  t.equal(seen['x-trace'], 'abc')
  t.equal(seen['a2a-version'], '1.0')
})

t.test('A2A-Extensions: the activated extensions are echoed; a required one is enforced', async t => {
  const ext = 'https://example.com/ext/a/v1'
  const required = 'https://example.com/ext/required/v1'
  const withExtensions = await startServer({
    card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, extensions: [{ uri: ext }, { uri: required, required: true }] } }
  })
  t.teardown(() => withExtensions.close())
  const accepted = await rest(withExtensions.endpoint, 'GET', '/tasks', { headers: { ...V1, 'a2a-extensions': `${ext}, https://unknown.example/x, ${required}` } })
  t.equal(accepted.status, 200)
  t.equal(accepted.headers.get('a2a-extensions'), `${ext}, ${required}`)
  const refused = await rest(withExtensions.endpoint, 'GET', '/tasks', { headers: { ...V1, 'a2a-extensions': ext } })
  t.equal(refused.status, 400)
  t.same(refused.body, {
    error: {
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: `Extension support required: ${required}`,
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENSION_SUPPORT_REQUIRED', domain: 'a2a-protocol.org', metadata: { extension: required } }]
    }
  })
  t.equal((await rest(base, 'GET', '/tasks', { headers: { ...V1, 'a2a-extensions': ext } })).headers.get('a2a-extensions'), null, 'nothing echoed when nothing is activated')
})
