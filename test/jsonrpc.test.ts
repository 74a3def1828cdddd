// The JSON-RPC binding's envelope rules (spec §9): parse errors, invalid requests,
// batches, unknown and v0.3 methods, ids, notifications, A2A-Version, A2A-Extensions,
// the body limit. After each bad request the server answers the next one.
import { deflateSync, gzipSync } from 'node:zlib'
import t, { type Test } from 'tap'
import { call, post, result, startServer, userMessage, V1 } from './helpers/server.js'
import { conformanceCard } from '../examples/agent.js'

const server = await startServer()
t.teardown(() => server.close())
const url = server.endpoint

async function stillServes (t: Test) {
  const answer = await result(url, 'SendMessage', { message: userMessage('still here') })
  t.equal(answer.task.status.state, 'TASK_STATE_COMPLETED', 'the next request is served')
}

t.test('not JSON → -32700 with id null, HTTP 200', async t => {
  const reply = await post(url, '{"jsonrpc":"2.0","id":1,')
  t.equal(reply.status, 200)
  t.match(reply.headers.get('content-type'), /^application\/json/)
  t.same(reply.body, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload' } })
  await stillServes(t)
})

t.test('a body that is not UTF-8 → -32700 naming it, and nothing run (decoded, two ids would become one)', async t => {
  const contextId = `latin1-${Date.now()}`
  const send = (extra: Record<string, string>, bytes: Uint8Array<ArrayBuffer>) => fetch(url, { method: 'POST', headers: { ...V1, ...extra }, body: bytes })
  const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('caf\u00e9', { contextId }) } })
  const latin1 = new Uint8Array(Buffer.from(text, 'latin1'))
  const reply = await send({ 'content-type': 'application/json' }, latin1)
  t.equal(reply.status, 200)
  t.same(await reply.json(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload: the body is not UTF-8' } })
  const other = await send({ 'content-type': 'text/plain' }, latin1)
  t.equal(other.status, 415, 'a media type the binding refuses is refused as such, whatever its bytes')
  t.same((await result(url, 'ListTasks', { contextId })).tasks, [], 'no task was made')
  await stillServes(t)
})

t.test('a body with a Content-Encoding → HTTP 415 naming the coding, and nothing run', async t => {
  const contextId = `gzip-${Date.now()}`
  const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('zipped', { contextId }) } })
  for (const [coding, bytes] of [['gzip', gzipSync(text)], ['deflate', deflateSync(text)], ['br', Buffer.from(text)]] as const) {
    const reply = await fetch(url, { method: 'POST', headers: { ...V1, 'content-type': 'application/json', 'content-encoding': coding }, body: new Uint8Array(bytes) })
    t.equal(reply.status, 415, coding)
    t.same(await reply.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Unsupported content coding ${coding}: send the body without a Content-Encoding` } }, coding)
  }
  const identity = await fetch(url, { method: 'POST', headers: { ...V1, 'content-type': 'application/json', 'content-encoding': 'Identity' }, body: text })
  t.equal((await identity.json()).result.task.status.state, 'TASK_STATE_COMPLETED', 'identity is no coding')
  t.equal((await result(url, 'ListTasks', { contextId })).totalSize, 1, 'only the unencoded body made a task')
})

t.test('an empty body → -32700', async t => {
  const reply = await post(url, '')
  t.same(reply.body, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload' } })
})

t.test('a batch (JSON array) → -32600', async t => {
  const reply = await post(url, [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }])
  t.same(reply.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request payload validation error: batch requests are not supported' } })
  await stillServes(t)
})

t.test('bad envelopes → -32600', async t => {
  t.same((await post(url, { id: 5, method: 'GetTask' })).body,
    { jsonrpc: '2.0', id: 5, error: { code: -32600, message: 'Request payload validation error: jsonrpc must be "2.0"' } })
  t.same((await post(url, { jsonrpc: '1.0', id: 'a', method: 'GetTask' })).body.error.code, -32600)
  t.same((await post(url, { jsonrpc: '2.0', id: 6, method: 7 })).body,
    { jsonrpc: '2.0', id: 6, error: { code: -32600, message: 'Request payload validation error: method must be a string' } })
  t.same((await post(url, { jsonrpc: '2.0', id: { x: 1 }, method: 'GetTask' })).body,
    { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request payload validation error: id must be a string, a number or null' } })
  t.same((await post(url, 'null')).body.error.code, -32600)
  t.same((await post(url, '"text"')).body.error.code, -32600)
})

t.test('v0.3 method names and unknown methods → -32601', async t => {
  for (const method of ['message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/resubscribe',
    'tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list',
    'tasks/pushNotificationConfig/delete', 'agent/getAuthenticatedExtendedCard', 'sendMessage', 'Nope']) {
    const reply = await post(url, { jsonrpc: '2.0', id: 'x', method, params: {} })
    t.same(reply.body, { jsonrpc: '2.0', id: 'x', error: { code: -32601, message: `Method not found: ${method}` } }, method)
  }
  await stillServes(t)
})

t.test('method is checked before the version: a v0.3 name without A2A-Version is -32601', async t => {
  const reply = await post(url, { jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }, {})
  t.equal(reply.body.error.code, -32601)
})

t.test('params that are not an object → -32602', async t => {
  const reply = await post(url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: ['x'] })
  t.same(reply.body, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid parameters: params must be an object', data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'params', description: 'must be an object' }] }] } })
})

t.test('invalid params → -32602 with a BadRequest naming the fields', async t => {
  const response = await call(url, 'SendMessage', { message: { messageId: 'm', role: 'user', parts: [] } })
  t.same(response.error, {
    code: -32602,
    message: 'Invalid parameters: message.role must be equal to one of the allowed values; message.parts must not have fewer than 1 items',
    data: [{
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [
        { field: 'message.role', description: 'must be equal to one of the allowed values' },
        { field: 'message.parts', description: 'must not have fewer than 1 items' }
      ]
    }]
  })
  const twoMembers = await call(url, 'SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a', data: 1 }] } })
  t.same(twoMembers.error.data[0].fieldViolations, [{ field: 'message.parts[0]', description: 'must have exactly one of text, raw, url, data' }])
  await stillServes(t)
})

t.test('params are checked before the version', async t => {
  const reply = await post(url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: {} }, {})
  t.equal(reply.body.error.code, -32602)
})

t.test('ids keep their JSON type', async t => {
  for (const id of ['abc', 42, 0, -1.5, null, '']) {
    const reply = await post(url, { jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'missing' } })
    t.same(reply.body.id, id, JSON.stringify(id))
    t.equal(reply.body.error.code, -32001)
  }
})

t.test('A2A-Version: missing is 0.3 → -32009; 1.0 (and 1.0.x) accepted; others -32009', async t => {
  const missing = await post(url, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x') } }, {})
  t.same(missing.body, {
    jsonrpc: '2.0',
    id: 1,
    error: {
      code: -32009,
      message: 'A2A version 0.3 (no A2A-Version was sent) is not supported; supported versions: 1.0',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } }]
    }
  })
  t.equal((await post(url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '' })).body.error.code, -32009)
  t.equal((await post(url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '0.3' })).body.error.code, -32009)
  t.equal((await post(url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '2.0' })).body.error.data[0].metadata.requestedVersion, '2.0')
  t.equal((await post(url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '1.0.1' })).body.error.code, -32001)
})

t.test('A2A-Version as a query parameter; the header wins', async t => {
  const body = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }
  t.equal((await post(`${url}/?A2A-Version=1.0`, body, {})).body.error.code, -32001)
  t.equal((await post(`${url}/?A2A-Version=1.0`, body, { 'a2a-version': '0.3' })).body.error.code, -32009)
  t.equal((await post(`${url}/?A2A-Version=0.3`, body, V1)).body.error.code, -32001)
})

t.test('allowMissingVersion treats a missing version as 1.0', async t => {
  const lenient = await startServer({ allowMissingVersion: true })
  t.teardown(() => lenient.close())
  const reply = await post(lenient.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, {})
  t.equal(reply.body.error.code, -32001)
  t.equal((await post(lenient.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '0.3' })).body.error.code, -32009)
})

t.test('a notification runs and gets no JSON-RPC answer (204)', async t => {
  const contextId = `ctx-notify-${Date.now()}`
  const reply = await post(url, { jsonrpc: '2.0', method: 'SendMessage', params: { message: userMessage('notified', { contextId }) } })
  t.equal(reply.status, 204)
  t.equal(reply.text, '')
  const listed = await result(url, 'ListTasks', { contextId })
  t.equal(listed.tasks.length, 1, 'the notification ran')
  const failed = await post(url, { jsonrpc: '2.0', method: 'GetTask', params: { id: 'missing' } })
  t.equal(failed.status, 204, 'a failing notification is silent too')
})

t.test('a streaming method sent as a notification is not run', async t => {
  const contextId = `ctx-stream-notify-${Date.now()}`
  const reply = await post(url, { jsonrpc: '2.0', method: 'SendStreamingMessage', params: { message: userMessage('x', { contextId }) } })
  t.equal(reply.status, 204)
  t.equal((await result(url, 'ListTasks', { contextId })).tasks.length, 0)
})

t.test('SubscribeToTask sent as a notification is not run: 204, no subscription taken', async t => {
  const methods: string[] = []
  const watched = await startServer({ interceptors: [{ before (context) { methods.push(context.method) } }] })
  t.teardown(() => watched.close())
  const { task } = await result(watched.endpoint, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
  const reply = await post(watched.endpoint, { jsonrpc: '2.0', method: 'SubscribeToTask', params: { id: task.id } })
  t.same({ status: reply.status, text: reply.text }, { status: 204, text: '' })
  t.equal(watched.fastify.a2a.bus.listenerCount(), 0, 'no subscription taken')
  t.equal(watched.fastify.a2a.handler.openStreams, 0, 'no stream open')
  t.equal((await result(watched.endpoint, 'CancelTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
  t.same(methods, ['SendMessage', 'CancelTask'], 'the notification never reached the call chain')
})

t.test('the body limit is a JSON-RPC error, not an HTML page', async t => {
  const small = await startServer({ bodyLimit: 1024 })
  t.teardown(() => small.close())
  const reply = await post(small.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x'.repeat(2000)) } })
  t.equal(reply.status, 413)
  t.match(reply.headers.get('content-type'), /^application\/json/)
  t.same(reply.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request payload is larger than 1024 bytes' } })
  const next = await result(small.endpoint, 'SendMessage', { message: userMessage('small') })
  t.equal(next.task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('a body that is not JSON by its Content-Type → HTTP 415, -32600, and nothing run (another site may POST a form or text/plain unpreflighted)', async t => {
  const contextId = `media-${Date.now()}`
  const send = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('hello', { contextId }) } }
  const stream = { ...send, method: 'SendStreamingMessage' }
  for (const [type, body] of [['text/plain', send], ['text/plain;charset=UTF-8', stream], ['application/x-www-form-urlencoded', send],
    ['multipart/form-data; boundary=x', send], ['application/json; charset=latin1', send], ['application/jsonx', send]] as const) {
    const reply = await post(url, body, { ...V1, 'content-type': type })
    t.equal(reply.status, 415, type)
    t.match(reply.headers.get('content-type'), /^application\/json/)
    t.same(reply.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Unsupported media type ${type}: send application/a2a+json or application/json` } }, type)
  }
  const untyped = await fetch(url, { method: 'POST', headers: V1, body: new Uint8Array(Buffer.from(JSON.stringify(send))) })
  t.equal(untyped.status, 415, 'a body with no Content-Type')
  t.same((await untyped.json()).error, { code: -32600, message: 'Unsupported media type (none): send application/a2a+json or application/json' })
  t.same((await result(url, 'ListTasks', { contextId })).tasks, [], 'no task was made')
  for (const type of ['application/json; charset=utf-8', 'Application/JSON;Charset="UTF-8"', 'application/a2a+json']) {
    const reply = await post(url, send, { ...V1, 'content-type': type })
    t.equal(reply.body.result.task.status.state, 'TASK_STATE_COMPLETED', type)
  }
})

t.test('A2A-Extensions: supported ones are activated and echoed, required ones enforced', async t => {
  const ext = 'https://example.com/ext/a/v1'
  const required = 'https://example.com/ext/required/v1'
  const withExtensions = await startServer({
    card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, extensions: [{ uri: ext }, { uri: required, required: true }] } }
  })
  t.teardown(() => withExtensions.close())
  const body = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x') } }
  const refused = await post(withExtensions.endpoint, body, { ...V1, 'a2a-extensions': ext })
  t.same(refused.body.error, {
    code: -32008,
    message: `Extension support required: ${required}`,
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENSION_SUPPORT_REQUIRED', domain: 'a2a-protocol.org', metadata: { extension: required } }]
  })
  const accepted = await post(withExtensions.endpoint, body, { ...V1, 'a2a-extensions': `${ext}, https://unknown.example/x,${required}` })
  t.equal(accepted.body.result.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal(accepted.headers.get('a2a-extensions'), `${ext}, ${required}`)
  const plain = await post(url, body, { ...V1, 'a2a-extensions': ext })
  t.equal(plain.headers.get('a2a-extensions'), null, 'nothing echoed when nothing is activated')
})

t.test('GET on the JSON-RPC path is not JSON-RPC', async t => {
  const response = await fetch(url + '/')
  t.equal(response.status, 404)
})
