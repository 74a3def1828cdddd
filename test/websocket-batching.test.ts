// The WebSocket write path batches: frames written in one tick go out in one write (the
// socket corked at the tick's first frame, uncorked at its end or once the batch reaches
// min(64 KiB, maxBufferedBytes)), and only a socket with nothing buffered is corked, so a
// batch never reads as a slow reader. Over a fake socket that logs cork, send and uncork,
// then over a real one.
import t from 'tap'
import type { Socket } from 'node:net'
import type { WebSocketLike } from '../lib/index.js'
import { startServer, userMessage } from './helpers/server.js'
import { connect, wsUrl } from './helpers/ws.js'
import { connectionInfo as info, makeConnectionServer } from './helpers/ws-core.js'

/** A socket that buffers what it is sent while corked (as a corked net.Socket does) and logs what happens. */
function corkingSocket () {
  const log: string[] = []
  const frames: any[] = []
  let corked = false
  let held = 0
  let backlog = 0
  const socket: WebSocketLike & { log: string[], frames: any[], setBacklog (bytes: number): void, peak: number } = {
    log,
    frames,
    peak: 0,
    get bufferedAmount () { return backlog + held },
    isOpen: true,
    setBacklog (bytes) { backlog = bytes },
    send (frame) {
      log.push('send')
      frames.push(JSON.parse(frame))
      if (corked) held += frame.length
      socket.peak = Math.max(socket.peak, held)
    },
    close () { log.push('close') },
    ping () {},
    cork () { log.push('cork'); corked = true },
    uncork () { log.push('uncork'); corked = false; held = 0 }
  }
  return socket
}

const settle = () => new Promise(resolve => setTimeout(resolve, 30))
const request = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method, params })

t.test('the replies to a burst of requests are written between one cork and one uncork', async t => {
  const socket = corkingSocket()
  const connection = makeConnectionServer({ maxBufferedBytes: 8 * 1024 * 1024 }).opened(socket, info)
  for (let id = 1; id <= 5; id++) connection.message(request(id, 'GetTask', { id: `missing-${id}` }), false)
  await settle()
  t.same(socket.log, ['cork', 'send', 'send', 'send', 'send', 'send', 'uncork'])
  t.same(socket.frames.map(frame => [frame.id, frame.error?.code]), [[1, -32001], [2, -32001], [3, -32001], [4, -32001], [5, -32001]])
  // A later tick is a batch of its own.
  connection.message(request(6, 'GetTask', { id: 'missing-6' }), false)
  await settle()
  t.same(socket.log.slice(7), ['cork', 'send', 'uncork'])
})

t.test('a socket with bytes already buffered is not corked: its writes queue behind them anyway', async t => {
  const socket = corkingSocket()
  socket.setBacklog(1)
  const connection = makeConnectionServer({ maxBufferedBytes: 8 * 1024 * 1024 }).opened(socket, info)
  for (let id = 1; id <= 3; id++) connection.message(request(id, 'GetTask', { id: 'missing' }), false)
  await settle()
  t.same(socket.log, ['send', 'send', 'send'])
})

t.test('a batch is written once it reaches maxBufferedBytes: a fast reader\'s stream never lags for it', async t => {
  const socket = corkingSocket()
  // About 150 bytes an event: several batches in one stream, each flushed at 2,000 bytes.
  const connection = makeConnectionServer({ maxBufferedBytes: 2000 }).opened(socket, info)
  connection.message(request(1, 'SendStreamingMessage', { message: userMessage('stream 100') }), false)
  await settle()
  const last = socket.frames.at(-1)
  t.same(last, { jsonrpc: '2.0', id: 1, result: { status: 'stream_complete' } }, 'the stream ended with its marker')
  t.equal(socket.frames.length, 104, 'every event, then the marker: none ended the stream STREAM_LAGGED')
  const corks = socket.log.filter(entry => entry === 'cork').length
  t.ok(corks > 1, `${corks} batches`)
  t.equal(socket.log.filter(entry => entry === 'uncork').length, corks, 'every cork is undone')
  const largest = Math.max(...socket.frames.map(frame => JSON.stringify(frame).length))
  t.ok(socket.peak >= 2000 && socket.peak < 2000 + largest, `a batch held ${socket.peak} bytes at most: the limit plus one frame`)
})

t.test('over a real socket, a stream of 2,000 events goes out in a few writes, whole and in order', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  let writes = 0
  server.fastify.websocketServer.on('connection', (ws) => {
    // Every write reaching the TCP socket, however Node's Writable groups the chunks.
    const tcp = (ws as unknown as { _socket: Socket & { _writev: (...args: any[]) => void, _write: (...args: any[]) => void } })._socket
    const writev = tcp._writev.bind(tcp)
    const write = tcp._write.bind(tcp)
    tcp._writev = (...args) => { writes++; writev(...args) }
    tcp._write = (...args) => { writes++; write(...args) }
  })
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  writes = 0
  const frames = await client.stream('SendStreamingMessage', { message: userMessage('stream 2000') })
  t.equal(frames.length, 2004, 'the task, working, 2,000 chunks, completed, the marker')
  t.same(frames.slice(2, -2).map(frame => frame.result.artifactUpdate.artifact.parts[0].text), Array.from({ length: 2000 }, (_, i) => `chunk ${i + 1}`))
  t.same(frames.at(-1).result, { status: 'stream_complete' })
  t.ok(writes < 100, `${writes} writes for 2,004 frames`)
})
