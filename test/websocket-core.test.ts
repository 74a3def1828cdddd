// The connection logic over a fake socket: no @fastify/websocket, no network. It shows the
// core is a library of its own (makeWebSocketServer over WebSocketLike).
import t from 'tap'
import type { WebSocketLike } from '../lib/index.js'
import { connectionInfo as info, makeConnectionServer as makeServer } from './helpers/ws-core.js'

function fakeSocket () {
  const sent: any[] = []
  const closes: Array<[number, string]> = []
  let buffered = 0
  const socket: WebSocketLike & { sent: any[], closes: typeof closes, setBuffered (n: number): void, open: boolean, pings: number } = {
    sent,
    closes,
    open: true,
    pings: 0,
    get bufferedAmount () { return buffered },
    get isOpen () { return socket.open },
    setBuffered (n) { buffered = n },
    send (frame) { sent.push(JSON.parse(frame)) },
    close (code, reason) { closes.push([code, reason]); socket.open = false },
    ping () { socket.pings++ }
  }
  return socket
}

const settle = () => new Promise(resolve => setTimeout(resolve, 30))
const message = (text: string) => ({ messageId: 'm', role: 'ROLE_USER', parts: [{ text }] })

t.test('a request frame gets its response frame', async t => {
  const socket = fakeSocket()
  const connection = makeServer().opened(socket, info)
  connection.message(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: 'nope' } }), false)
  await settle()
  t.equal(socket.sent.length, 1)
  t.match(socket.sent[0], { jsonrpc: '2.0', id: 9, error: { code: -32001 } })
})

t.test('a stream: events then the marker', async t => {
  const socket = fakeSocket()
  const connection = makeServer().opened(socket, info)
  connection.message(JSON.stringify({ jsonrpc: '2.0', id: 's', method: 'SendStreamingMessage', params: { message: message('stream 2') } }), false)
  await settle()
  t.same(socket.sent.map(f => Object.keys(f.result)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate', 'status'])
  t.same(socket.sent.at(-1), { jsonrpc: '2.0', id: 's', result: { status: 'stream_complete' } })
})

t.test('over maxMessageSize the connection is closed with 1009', async t => {
  const socket = fakeSocket()
  makeServer().opened(socket, info).message('x'.repeat(1025), false)
  t.same(socket.closes, [[1009, 'message larger than 1024 bytes']])
})

t.test('a buffered amount over the bound ends the stream with STREAM_LAGGED', async t => {
  const socket = fakeSocket()
  const server = makeServer()
  const connection = server.opened(socket, info)
  socket.setBuffered(5000)
  connection.message(JSON.stringify({ jsonrpc: '2.0', id: 'lag', method: 'SendStreamingMessage', params: { message: message('hold') } }), false)
  await settle()
  t.equal(socket.sent.length, 1)
  t.match(socket.sent[0], { id: 'lag', error: { code: -32603, data: [{ reason: 'STREAM_LAGGED', domain: 'a2a-rust.com' }] } })
})

t.test('writes after the socket closed are skipped; closed() releases streams; drain closes with 1001', async t => {
  const socket = fakeSocket()
  const server = makeServer()
  const connection = server.opened(socket, info)
  connection.message(JSON.stringify({ jsonrpc: '2.0', id: 'h', method: 'SendStreamingMessage', params: { message: message('hold') } }), false)
  await settle()
  t.equal(server.connections, 1)
  t.equal(socket.sent.length, 2)
  socket.open = false
  connection.closed()
  t.equal(server.connections, 0)
  const other = fakeSocket()
  server.opened(other, info)
  await server.drain(0)
  t.same(other.closes, [[1001, 'server shutting down']])
})

t.test('idle: a ping half-way; a close at the timeout whether the pong comes or not', async t => {
  const server = makeServer({ idleTimeout: 100 })
  const answering = fakeSocket()
  const silent = fakeSocket()
  const answered = server.opened(answering, info)
  const unanswered = server.opened(silent, info)
  await new Promise(resolve => setTimeout(resolve, 70))
  t.same([answering.pings, silent.pings], [1, 1], 'each pinged once')
  answered.alive()
  t.same([answering.closes, silent.closes], [[], []])
  await new Promise(resolve => setTimeout(resolve, 60))
  t.same(answering.closes, [[1001, 'idle timeout']], 'a pong is no application message')
  t.same(silent.closes, [[1001, 'idle timeout']], 'no pong: the same close, once (the missed pong and the idle timeout fall together)')
  answered.closed()
  unanswered.closed()
})
