// Seed 001, selection: a client that offers `Sec-WebSocket-Protocol: a2a.v1` gets it
// selected and that dialect on the seed-000 route; a client offering nothing or only
// unknown subprotocols gets seed 000 as before. The card lists the dialect as its own
// interface, and one server serves both dialects at once.
import t from 'tap'
import { A2A_V1_BINDING, WEBSOCKET_BINDING_URI } from '../lib/index.js'
import { startServer, userMessage } from './helpers/server.js'
import { connect, rawUpgrade, wsUrl } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

const taskNotFound = (id: unknown) => ({
  jsonrpc: '2.0',
  id,
  error: { code: -32001, message: 'Task not found: x', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'x' } }] }
})

t.test('an offer of a2a.v1 selects it, alone or among others; no offer or unknown ones select nothing', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const alone = await rawUpgrade(server.origin, ['Sec-WebSocket-Protocol: a2a.v1'])
  t.match(alone.response, /^HTTP\/1\.1 101 Switching Protocols\r\n/)
  t.match(alone.response, /\r\nSec-WebSocket-Protocol: a2a\.v1(\r\n|$)/i, 'selected, with no A2A-Version at the upgrade')
  alone.socket.destroy()
  const among = await connectV1(v1Url(server.origin), {}, ['x.v9', 'a2a.v1'])
  t.equal(among.socket.protocol, 'a2a.v1')
  among.close()
  for (const lines of [['A2A-Version: 1.0'], ['A2A-Version: 1.0', 'Sec-WebSocket-Protocol: unknown.v9, a2a.v2']]) {
    const { socket, response } = await rawUpgrade(server.origin, lines)
    t.match(response, /^HTTP\/1\.1 101 /)
    t.notMatch(response.toLowerCase(), /sec-websocket-protocol/, `seed 000 for ${lines.join(' / ')}`)
    socket.destroy()
  }
})

t.test('the card lists WEBSOCKET with the same ws:// URL, right after the seed-000 entry', async t => {
  const server = await startServer({ prefix: '/agent' })
  t.teardown(() => server.close())
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.same(card.supportedInterfaces.map((i: any) => i.protocolBinding), ['JSONRPC', 'HTTP+JSON', WEBSOCKET_BINDING_URI, A2A_V1_BINDING])
  const url = `${server.origin.replace('http', 'ws')}/agent`
  t.same(card.supportedInterfaces[3], { url, protocolBinding: 'WEBSOCKET', protocolVersion: '1.0' })
  t.equal(card.supportedInterfaces[2].url, url)
  const client = await connectV1(v1Url(server.origin, '/agent'))
  t.same(await client.request('r1', 'GetTask', { id: 'x' }), taskNotFound('r1'))
  client.close()
})

t.test('both dialects at once on one server: each connection gets its own framing of the same tasks', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const seed = await connect(wsUrl(server.origin))
  const v1 = await connectV1(v1Url(server.origin))
  t.teardown(() => { seed.close(); v1.close() })
  const [seedFrames, v1Frames] = await Promise.all([
    seed.stream('SendStreamingMessage', { message: userMessage('stream 2') }, 'same-id'),
    v1.stream('same-id', 'SendStreamingMessage', { message: userMessage('stream 2') })
  ])
  t.same(seedFrames.at(-1), { jsonrpc: '2.0', id: 'same-id', result: { status: 'stream_complete' } })
  t.same(v1Frames.at(-1), { jsonrpc: '2.0', id: 'same-id', streamEnd: true })
  t.same(seedFrames.slice(0, -1).map(f => Object.keys(f.result)[0]), v1Frames.slice(0, -1).map(f => Object.keys(f.result)[0]))
  t.equal(seedFrames.length, 6)
  const v1Task = v1Frames[0].result.task.id
  t.equal((await seed.request('GetTask', { id: v1Task })).result.status.state, 'TASK_STATE_COMPLETED', 'one handler behind both')
  t.same(await seed.request('GetTask', { id: 'x' }, 7), taskNotFound(7))
  t.same(await v1.request(7, 'GetTask', { id: 'x' }), taskNotFound(7), 'the same error table')
})

t.test('websocket.a2aV1.enabled: false serves seed 000 only, and the card has no WEBSOCKET entry', async t => {
  const server = await startServer({ websocket: { a2aV1: { enabled: false } } })
  t.teardown(() => server.close())
  const { socket, response } = await rawUpgrade(server.origin, ['A2A-Version: 1.0', 'Sec-WebSocket-Protocol: a2a.v1'])
  t.match(response, /^HTTP\/1\.1 101 /)
  t.notMatch(response.toLowerCase(), /sec-websocket-protocol/)
  socket.destroy()
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.same(card.supportedInterfaces.map((i: any) => i.protocolBinding), ['JSONRPC', 'HTTP+JSON', WEBSOCKET_BINDING_URI])
})
