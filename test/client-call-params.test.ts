// A call's own service parameters (CallOptions.serviceParams), against a real server: on
// WebSocket a2a.v1 the request frame's `serviceParams`, over the upgrade's for that call
// only; over JSON-RPC and HTTP+JSON the request's headers, over the transport's; on seed
// 000, which has the upgrade's only, a TypeError before anything is sent.
import t from 'tap'
import { A2AClient, JsonRpcTransport, RestTransport, WebSocketTransport, type CallOptions } from '../lib/client/index.js'
import { startServer, userMessage } from './helpers/server.js'
import { wireSpy } from './helpers/wire-spy.js'

const server = await startServer()
t.teardown(() => server.close())
const wsOrigin = server.origin.replace('http', 'ws')

/** The service parameters the executor saw (the conformance agent's `params`), by a unary call or from a stream's artifact. */
async function paramsSeen (client: A2AClient, options?: CallOptions, stream = false): Promise<Record<string, string>> {
  if (!stream) return (await client.sendMessage({ message: userMessage('params') }, options)).task?.artifacts?.[0]?.parts[0]?.data as Record<string, string>
  for await (const event of client.sendStreamingMessage({ message: userMessage('params') }, options)) {
    if (event.artifactUpdate !== undefined) return event.artifactUpdate.artifact.parts[0]?.data as Record<string, string>
  }
  throw new Error('the stream had no artifact')
}

t.test("a2a.v1: a call's serviceParams go in its frame, lowercased with the version, and reach the executor over the upgrade's", async t => {
  const spy = wireSpy()
  const client = new A2AClient(new WebSocketTransport({
    url: wsOrigin, dialect: 'a2a.v1', WebSocket: spy.WebSocket, serviceParams: { 'X-Client': 'upgrade', 'X-Kept': 'kept' }
  }))
  t.teardown(() => client.close())
  const own = { serviceParams: { 'X-Client': 'call', 'X-Extra': 'only here' } }
  // Leaving a stream early sends a cancelStream after its request.
  const requests = () => spy.sent.filter(frame => frame.method !== undefined)
  for (const stream of [false, true]) {
    const seen = await paramsSeen(client, own, stream)
    t.match(seen, { 'x-client': 'call', 'x-kept': 'kept', 'x-extra': 'only here', 'a2a-version': '1.0' }, stream ? 'a stream' : 'a unary call')
    t.same(requests().at(-1).serviceParams, { 'a2a-version': '1.0', 'x-client': 'call', 'x-extra': 'only here' })
  }
  const plain = await paramsSeen(client)
  t.equal(plain['x-client'], 'upgrade', 'the next call sees the upgrade\'s again')
  t.notOk('x-extra' in plain)
  t.same(requests().at(-1).serviceParams, { 'a2a-version': '1.0' })
  t.equal(spy.sockets.length, 1, 'all on one connection')
})

t.test('a2a.v1: a credential sent per call authenticates that call on an anonymous connection (what a browser can do)', async t => {
  const guarded = await startServer({ auth: { bearer: { tokens: ['token-1'] } }, websocket: { a2aV1: { refuseAtUpgrade: false } } })
  t.teardown(() => guarded.close())
  const client = new A2AClient(new WebSocketTransport({ url: guarded.origin.replace('http', 'ws'), dialect: 'a2a.v1' }))
  t.teardown(() => client.close())
  await t.rejects(client.getTask({ id: 'x' }, { serviceParams: { Authorization: 'Bearer token-1' } }), { name: 'A2AClientError', code: -32001 }, 'authenticated, then not found')
  await t.rejects(client.getTask({ id: 'x' }), { name: 'UnexpectedStatusError', status: 401 }, 'the call without it is refused')
})

for (const [name, make] of Object.entries({
  'JSON-RPC': (serviceParams: Record<string, string>) => new JsonRpcTransport({ url: server.endpoint, serviceParams }),
  'HTTP+JSON': (serviceParams: Record<string, string>) => new RestTransport({ url: server.endpoint, serviceParams })
})) {
  t.test(`${name}: a call's serviceParams are its request headers, over the transport's, names compared ignoring case`, async t => {
    const client = new A2AClient(make({ 'X-Client': 'transport', Authorization: 'Bearer a' }))
    for (const stream of [false, true]) {
      const seen = await paramsSeen(client, { serviceParams: { 'x-client': 'call', 'A2A-Version': '1.0.1' } }, stream)
      t.match(seen, { 'x-client': 'call', authorization: 'Bearer a', 'a2a-version': '1.0.1' }, stream ? 'a stream' : 'a unary call')
    }
    t.match(await paramsSeen(client), { 'x-client': 'transport', 'a2a-version': '1.0' }, 'the next call sends the transport\'s again')
  })
}

t.test("seed 000: a call's own serviceParams are a TypeError, on a call and on a stream, and nothing is sent", async t => {
  const spy = wireSpy()
  const client = new A2AClient(new WebSocketTransport({ url: wsOrigin, WebSocket: spy.WebSocket }))
  t.teardown(() => client.close())
  const refusal = new TypeError('seed 000 sends service parameters with the upgrade only (§2): set them on the transport, or use the a2a.v1 dialect')
  await t.rejects(client.getTask({ id: 'x' }, { serviceParams: { 'X-Trace': 'abc' } }), refusal)
  await t.rejects(client.subscribeToTask({ id: 'x' }, { serviceParams: { 'X-Trace': 'abc' } }).next(), refusal)
  t.equal(spy.sockets.length, 0)
})
