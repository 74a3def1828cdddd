// Seed 001, close codes: 1000 answered, 1002 for bad JSON, 1003 for a binary frame, 1009
// past the message cap, 1011 for a failure no call caused, 1013 when the message budget
// cannot be checked, 4000 for a message that is no frame of the dialect, 4002 after the
// error frame of an unsupported version. (1001: websocket-a2a-v1-liveness; 1008:
// websocket-a2a-v1-limits; 4001: websocket-a2a-v1-auth.)
import t from 'tap'
import { A2A_V1_SUBPROTOCOL, CloseCode, makeWebSocketServer, type A2AError, type WebSocketLike } from '../lib/index.js'
import type { CallRunner } from '../lib/dispatcher/call.js'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { connect, wsUrl } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

const server = await startServer()
t.teardown(() => server.close())

t.test('1000: a normal closure by the client is answered with 1000; its streams are released, the task goes on', async t => {
  const client = await connectV1(v1Url(server.origin))
  client.call('h', 'SendStreamingMessage', { message: userMessage('hold') })
  const task = (await client.nextFor('h')).result.task
  await client.nextFor('h')
  client.close(CloseCode.Normal)
  t.equal((await client.closed).code, 1000)
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 0)
  const checker = await connectV1(v1Url(server.origin))
  t.teardown(() => checker.close())
  t.equal((await checker.request('g', 'GetTask', { id: task.id })).result.status.state, 'TASK_STATE_WORKING')
  await checker.request('c', 'CancelTask', { id: task.id })
})

t.test('1002: unparseable JSON gets a -32700 frame, then the connection closes', async t => {
  const client = await connectV1(v1Url(server.origin))
  client.send('{"jsonrpc":"2.0","id":"r1","method":')
  t.same(await client.next(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload' } })
  t.same(await client.closed, { code: 1002, reason: 'invalid JSON' })
})

t.test('1003: a binary frame closes the connection without an answer', async t => {
  const client = await connectV1(v1Url(server.origin))
  client.socket.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'b', method: 'GetTask', params: { id: 'x' } })), { binary: true })
  t.same(await client.closed, { code: 1003, reason: 'binary frames are not supported' })
  t.same(await client.quiet(0), [])
})

t.test('1009: past the 1 MiB cap (an option) the connection closes; a message under it is served', async t => {
  const client = await connectV1(v1Url(server.origin))
  const under = await client.request('under', 'GetTask', { id: 'x', padding: 'x'.repeat(1024 * 1024 - 200) })
  t.equal(under.error.code, -32001)
  client.call('over', 'GetTask', { id: 'x', padding: 'x'.repeat(1024 * 1024) })
  t.same(await client.closed, { code: 1009, reason: 'message larger than 1048576 bytes' })
  const small = await startServer({ websocket: { a2aV1: { maxMessageSize: 2048 } } })
  t.teardown(() => small.close())
  const capped = await connectV1(v1Url(small.origin))
  capped.call('big', 'GetTask', { id: 'x', padding: 'x'.repeat(3000) })
  t.equal((await capped.closed).code, 1009)
  const seed = await connect(wsUrl(small.origin))
  t.equal((await seed.request('GetTask', { id: 'x', padding: 'x'.repeat(3000) })).error.code, -32001, 'seed 000 keeps its own 4 MiB cap')
  seed.close()
})

t.test('1011: a failure no call caused (here the socket itself) closes the connection', async t => {
  const closes: Array<[number, string]> = []
  const errors: A2AError[] = []
  const socket: WebSocketLike = {
    bufferedAmount: 0,
    get isOpen () { return closes.length === 0 },
    send () { throw new Error('the socket broke') },
    close (code, reason) { closes.push([code, reason]) },
    ping () {}
  }
  const runner = { run: async () => ({ kind: 'unary', value: {} }) } as unknown as CallRunner
  const limits = { maxInFlight: 1, maxMessageSize: 1024, pingInterval: 0, pongTimeout: 1, idleTimeout: 0 }
  const wsServer = makeWebSocketServer({ runner, maxInFlight: 1, maxMessageSize: 1024, maxBufferedBytes: 1024, idleTimeout: 0, a2aV1: limits, onError: (error) => errors.push(error) })
  const connection = wsServer.opened(socket, { serviceParams: {}, version: '1.0', extensions: [], protocol: A2A_V1_SUBPROTOCOL })
  connection.message(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }), false)
  await eventually(() => closes.length > 0)
  t.same(closes, [[1011, 'internal error']])
  t.equal(errors.at(-1)?.row.jsonRpcCode, -32603)
  connection.closed()
})

t.test('1013: when the message budget cannot be checked (its store fails) the message is refused, then the connection closes', async t => {
  const failing = await startServer({
    websocket: { a2aV1: { rateLimit: { store: { incr (_key, callback) { callback(new Error('the store is down')) } } } } }
  })
  t.teardown(() => failing.close())
  const client = await connectV1(v1Url(failing.origin))
  client.call('r1', 'GetTask', { id: 'x' })
  t.same(await client.next(), {
    jsonrpc: '2.0',
    id: 'r1',
    error: { code: -32603, message: 'Service unavailable: the message rate limit cannot be checked', data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }] }
  })
  t.same(await client.closed, { code: 1013, reason: 'try again later' })
})

t.test('4000: a message that is JSON but no a2a.v1 frame gets a -32600 frame, then the connection closes', async t => {
  const invalid = (id: unknown, reason: string) => ({ jsonrpc: '2.0', id, error: { code: -32600, message: `Request payload validation error: ${reason}` } })
  const cases: Array<[string, unknown, object]> = [
    ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }], invalid(null, 'batch requests are not supported')],
    ['no jsonrpc', { id: 'j', method: 'GetTask', params: { id: 'x' } }, invalid('j', 'jsonrpc must be "2.0"')],
    ['no id', { jsonrpc: '2.0', method: 'GetTask', params: { id: 'x' } }, invalid(null, 'an a2a.v1 request needs an id, a string or a number')],
    ['a null id', { jsonrpc: '2.0', id: null, method: 'GetTask', params: { id: 'x' } }, invalid(null, 'an a2a.v1 request needs an id, a string or a number')],
    ['neither method nor cancelStream', { jsonrpc: '2.0', id: 'n' }, invalid('n', 'method must be a string')],
    ['serviceParams not strings', { jsonrpc: '2.0', id: 'sp', method: 'GetTask', params: { id: 'x' }, serviceParams: { 'a2a-version': ['1.0'] } }, invalid('sp', 'serviceParams must be an object of string values')],
    ['a cancelStream without an id', { jsonrpc: '2.0', cancelStream: true }, invalid(null, 'cancelStream needs "jsonrpc":"2.0" and the id of a stream')]
  ]
  for (const [name, message, answer] of cases) {
    const client = await connectV1(v1Url(server.origin))
    client.send(message)
    t.same(await client.next(), answer, name)
    t.same(await client.closed, { code: 4000, reason: 'not an a2a.v1 frame' }, name)
  }
})

t.test('4002: the connection\'s unsupported version gets its error frame, then the close; a call\'s own only the frame', async t => {
  const client = await connectV1(v1Url(server.origin))
  t.same(await client.request('old', 'GetTask', { id: 'x' }, { 'a2a-version': '0.3' }), {
    jsonrpc: '2.0',
    id: 'old',
    error: {
      code: -32009,
      message: 'A2A version 0.3 is not supported; supported versions: 1.0',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } }]
    }
  })
  t.equal((await client.request('now', 'GetTask', { id: 'x' })).error.code, -32001, 'the call\'s own version refused, the connection serves on')
  client.close()
  const upgraded = await connectV1(v1Url(server.origin), { headers: { 'A2A-Version': '0.3' } })
  t.equal((await upgraded.request('old', 'GetTask', { id: 'x' }, {})).error.code, -32009)
  t.same(await upgraded.closed, { code: 4002, reason: 'version not supported' }, 'the connection\'s version refused: it closes')
  const none = await connectV1(v1Url(server.origin))
  t.equal((await none.request('none', 'GetTask', { id: 'x' }, {})).error.message, 'A2A version 0.3 (no A2A-Version was sent) is not supported; supported versions: 1.0', 'no version anywhere is 0.3')
  t.equal((await none.closed).code, 4002)
})
