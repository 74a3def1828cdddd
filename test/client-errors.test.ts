// How refusals surface (seed 000 §6), against real servers: an A2A error is an
// A2AClientError with the same code and ErrorInfo on every transport; a refused upgrade
// (400/401/403/503) is an UnexpectedStatusError with the status and the REST error body;
// the UNAUTHENTICATED / PERMISSION_DENIED refusal is an UnexpectedStatusError 401 / 403
// on a unary call and as a stream's first item, on every transport.
import t from 'tap'
import * as server from '../lib/index.js'
import {
  A2AClient, A2AClientError, JsonRpcTransport, RestTransport, UnexpectedStatusError, WebSocketTransport, type Transport
} from '../lib/client/index.js'
import { errorFromJsonRpc, errorFromRest } from '../lib/client/errors.js'
import { startServer, userMessage, type TestServer } from './helpers/server.js'

const challenge = 'Bearer realm="a2a"'
const errorInfo = (reason: string, domain: string, metadata?: Record<string, string>) =>
  ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain, ...(metadata === undefined ? {} : { metadata }) })

const open = await startServer()
t.teardown(() => open.close())

function transports (target: TestServer, serviceParams?: Record<string, string>): Record<string, () => Transport> {
  return {
    WebSocket: () => new WebSocketTransport({ url: target.origin.replace('http', 'ws'), serviceParams }),
    'JSON-RPC': () => new JsonRpcTransport({ url: target.endpoint, serviceParams }),
    'HTTP+JSON': () => new RestTransport({ url: target.endpoint, serviceParams })
  }
}

async function failure (promise: Promise<unknown>): Promise<any> {
  return await promise.then(() => { throw new Error('the call succeeded') }, (error: unknown) => error)
}

for (const [name, make] of Object.entries(transports(open))) {
  t.test(`${name}: A2A errors are A2AClientErrors with code, reason, domain, metadata and details`, async t => {
    const client = new A2AClient(make())
    t.teardown(() => client.close())
    const httpStatus = (status: number) => name === 'HTTP+JSON' ? status : undefined

    const notFound = await failure(client.getTask({ id: 'no-such-task' }))
    t.type(notFound, A2AClientError)
    t.match(notFound, {
      code: -32001,
      message: 'Task not found: no-such-task',
      reason: 'TASK_NOT_FOUND',
      domain: 'a2a-protocol.org',
      metadata: { taskId: 'no-such-task' },
      httpStatus: httpStatus(404),
      retryable: false
    })
    t.same(notFound.details, [errorInfo('TASK_NOT_FOUND', 'a2a-protocol.org', { taskId: 'no-such-task' })])

    const done = await client.sendMessage({ message: userMessage('done') })
    const notCancelable = await failure(client.cancelTask({ id: done.task!.id }))
    t.match(notCancelable, { name: 'A2AClientError', code: -32002, reason: 'TASK_NOT_CANCELABLE', httpStatus: httpStatus(400) })

    const invalid = await failure(client.listTasks({ pageSize: 1000 }))
    t.match(invalid, { name: 'A2AClientError', code: -32602, reason: undefined, httpStatus: httpStatus(400) })
    t.match(invalid.details, [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'pageSize' }] }])

    const lateStream = client.subscribeToTask({ id: done.task!.id })
    await t.rejects(lateStream.next(), { name: 'A2AClientError', code: -32004, reason: 'UNSUPPORTED_OPERATION' }, 'a stream refused before its first event')
  })
}

t.test("the client maps the server's errors to their JSON-RPC codes on both shapes", async t => {
  const errors = server as unknown as Record<string, new () => server.A2AError>
  const make = (name: string) => name === 'InvalidParams' ? server.invalidParams([{ field: 'id', description: 'is required' }]) : new errors[`${name}Error`]!()
  for (const [name, row] of Object.entries(server.errorTable)) {
    const viaJsonRpc = errorFromJsonRpc(server.toJsonRpcError(make(name)))
    // The origin refusal only happens at the upgrade, as an HTTP status; it is no frame.
    if (name === 'OriginNotAllowed') continue
    if (row.httpStatus === 401 || row.httpStatus === 403) t.match(viaJsonRpc, { name: 'UnexpectedStatusError', status: row.httpStatus }, name)
    else t.match(viaJsonRpc, { name: 'A2AClientError', code: row.jsonRpcCode, reason: 'reason' in row ? row.reason : undefined }, `${name} over JSON-RPC`)
  }
  // HTTP+JSON carries no JSON-RPC code: an A2A error's comes from its reason, the others' from the status.
  const reasoned = Object.entries(server.errorTable).filter(([, row]) => 'reason' in row && row.httpStatus !== 401 && row.httpStatus !== 403)
  const generic = ['InvalidRequest', 'MethodNotFound', 'InvalidParams', 'Internal', 'PayloadTooLarge', 'UnsupportedMediaType', 'RateLimited', 'Unavailable']
  t.same(reasoned.map(([name]) => name), [
    'TaskNotFound', 'TaskNotCancelable', 'PushNotificationNotSupported', 'UnsupportedOperation', 'ContentTypeNotSupported',
    'InvalidAgentResponse', 'ExtendedAgentCardNotConfigured', 'ExtensionSupportRequired', 'VersionNotSupported', 'StreamLagged'
  ], 'the ten A2A errors with a reason and no 401/403')
  for (const [name, row] of [...reasoned, ...generic.map(name => [name, server.errorTable[name as server.ErrorName]] as const)]) {
    t.match(errorFromRest(row.httpStatus, server.toRestError(make(name))), { name: 'A2AClientError', code: row.jsonRpcCode, httpStatus: row.httpStatus }, `${name} over HTTP+JSON`)
  }
  for (const name of ['Unauthenticated', 'PermissionDenied', 'OriginNotAllowed']) {
    const row = server.errorTable[name as server.ErrorName]
    t.match(errorFromRest(row.httpStatus, server.toRestError(make(name))), { name: 'UnexpectedStatusError', status: row.httpStatus }, `${name} over HTTP+JSON`)
  }
})

t.test('refused upgrades are UnexpectedStatusErrors with the status and the REST error body', async t => {
  t.test('400: an unsupported A2A-Version', async t => {
    const transport = new WebSocketTransport({ url: open.origin.replace('http', 'ws'), serviceParams: { 'A2A-Version': '0.3' } })
    const refused = await failure(transport.connect())
    t.type(refused, UnexpectedStatusError)
    t.match(refused, { status: 400, retryable: false, body: { error: { code: 400, status: 'FAILED_PRECONDITION' } } })
    t.same(refused.body.error.details, [errorInfo('VERSION_NOT_SUPPORTED', 'a2a-protocol.org', { requestedVersion: '0.3', supportedVersions: '1.0' })])
  })

  t.test('401: no credential, with an agent that refuses at the upgrade', async t => {
    const guarded = await startServer({ auth: { bearer: { tokens: ['token-1'] }, refuseAtUpgrade: true } })
    t.teardown(() => guarded.close())
    const refused = await failure(new WebSocketTransport({ url: guarded.origin.replace('http', 'ws') }).connect())
    t.match(refused, { name: 'UnexpectedStatusError', status: 401, wwwAuthenticate: challenge, body: { error: { code: 401, status: 'UNAUTHENTICATED' } } })
    const admitted = new A2AClient(new WebSocketTransport({ url: guarded.origin.replace('http', 'ws'), serviceParams: { Authorization: 'Bearer token-1' } }))
    t.teardown(() => admitted.close())
    t.equal((await admitted.sendMessage({ message: userMessage('in') })).task?.status.state, 'TASK_STATE_COMPLETED')
  })

  t.test('403: an Origin the agent does not allow', async t => {
    const strict = await startServer({ websocket: { allowedOrigins: ['https://ok.example'] } })
    t.teardown(() => strict.close())
    const refused = await failure(new WebSocketTransport({ url: strict.origin.replace('http', 'ws'), serviceParams: { Origin: 'https://evil.example' } }).connect())
    t.match(refused, { name: 'UnexpectedStatusError', status: 403 })
    t.same(refused.body, { error: { code: 403, status: 'PERMISSION_DENIED', message: 'Origin https://evil.example is not allowed' } })
  })

  t.test('503: the connection cap is reached (retryable)', async t => {
    const capped = await startServer({ websocket: { maxConnections: 1 } })
    t.teardown(() => capped.close())
    const first = new WebSocketTransport({ url: capped.origin.replace('http', 'ws') })
    t.teardown(() => first.close())
    await first.connect()
    const refused = await failure(new WebSocketTransport({ url: capped.origin.replace('http', 'ws') }).connect())
    t.match(refused, { name: 'UnexpectedStatusError', status: 503, retryable: true, body: { error: { code: 503, status: 'UNAVAILABLE' } } })
  })
})

t.test('UNAUTHENTICATED / PERMISSION_DENIED refusals are UnexpectedStatusError 401 / 403 on a unary call and as a stream\'s first item', async t => {
  const guarded = await startServer({
    interceptors: [{
      before (context) {
        if (context.serviceParams.authorization !== 'Bearer token-1') {
          throw new server.UnauthenticatedError().with({ metadata: { 'www-authenticate': challenge } })
        }
        if (context.method === 'CancelTask') throw new server.PermissionDeniedError()
      }
    }]
  })
  t.teardown(() => guarded.close())
  for (const [name, make] of Object.entries(transports(guarded))) {
    const anonymous = new A2AClient(make())
    t.teardown(() => anonymous.close())
    const unary = await failure(anonymous.getTask({ id: 'x' }))
    t.type(unary, UnexpectedStatusError, name)
    t.match(unary, { status: 401, wwwAuthenticate: challenge, retryable: false }, name)
    const stream = anonymous.sendStreamingMessage({ message: userMessage('stream 2') })
    const first = await stream.next().catch((error: unknown) => error)
    t.match(first, { name: 'UnexpectedStatusError', status: 401, wwwAuthenticate: challenge }, `${name}, stream`)
    t.same(await stream.next(), { value: undefined, done: true })

    const known = new A2AClient(transports(guarded, { Authorization: 'Bearer token-1' })[name]!())
    t.teardown(() => known.close())
    const task = (await known.sendMessage({ message: userMessage('hello') })).task!
    t.match(await failure(known.cancelTask({ id: task.id })), { name: 'UnexpectedStatusError', status: 403, wwwAuthenticate: undefined }, name)
  }
  const frame = await failure(new A2AClient(transports(guarded).WebSocket!()).getTask({ id: 'x' }))
  t.same(frame.body, {
    code: -32600,
    message: 'authentication required',
    data: [errorInfo('UNAUTHENTICATED', 'a2a-rust.com', { 'www-authenticate': challenge })]
  }, 'over WebSocket the body is the refusal frame\'s error object')
})

t.test("the agent's own limit of 64 calls per connection is a retryable A2AClientError with the retry delay", async t => {
  const transport = new WebSocketTransport({ url: open.origin.replace('http', 'ws'), maxPending: 100 })
  const client = new A2AClient(transport)
  t.teardown(() => client.close())
  const contextId = `limit-${Date.now()}`
  const held = Array.from({ length: 64 }, () => client.sendStreamingMessage({ message: userMessage('hold', { contextId }) }))
  await Promise.all(held.map(events => events.next()))
  const refused = await failure(client.getTask({ id: 'x' }))
  t.match(refused, { name: 'A2AClientError', code: -32603, retryable: true, retryDelayMs: 1000, message: 'Service unavailable: 64 requests are in progress on this connection' })
})

t.test('a refusal frame is read by its binding ErrorInfo wherever it stands: other details come before it (seed 000 §6)', async t => {
  const refusal = errorFromJsonRpc({
    code: -32600,
    message: 'authentication required',
    data: [errorInfo('TOKEN_EXPIRED', 'auth.example.com'), errorInfo('UNAUTHENTICATED', 'a2a-rust.com', { 'www-authenticate': challenge })]
  })
  t.type(refusal, UnexpectedStatusError)
  t.match(refusal, { status: 401, wwwAuthenticate: challenge, retryable: false })
  t.type(errorFromJsonRpc({ code: -32600, message: 'bad', data: [errorInfo('UNAUTHENTICATED', 'auth.example.com')] }), A2AClientError,
    'an ErrorInfo of another domain is no refusal')
})
