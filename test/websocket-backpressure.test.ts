// Backpressure on a WebSocket connection (README *Slow consumers*): while its socket holds
// more than `websocket.maxBufferedBytes` unsent, the connection stops reading the peer, so
// a peer that sends requests and never reads the answers cannot make the server buffer
// them without bound; once the peer reads again, every request is answered. Over a fake
// socket (the order of what is held), then over real sockets in both dialects.
import t from 'tap'
import WebSocket from 'ws'
import type { WebSocketLike } from '../lib/index.js'
import type { A2AInterceptor } from '../lib/interceptors/types.js'
import { eventually, result, startServer, userMessage } from './helpers/server.js'
import { wsUrl } from './helpers/ws.js'
import { v1Url } from './helpers/ws-a2a-v1.js'
import { connectionInfo as info, makeConnectionServer } from './helpers/ws-core.js'

t.test('over maxBufferedBytes reading pauses; the messages read meanwhile are acted on in order once the peer caught up', async t => {
  const server = makeConnectionServer({ maxBufferedBytes: 1000 })
  const frames: any[] = []
  let buffered = 0
  let pauses = 0
  let resume: (() => void) | undefined
  const socket: WebSocketLike = {
    get bufferedAmount () { return buffered },
    isOpen: true,
    send: (frame) => { frames.push(JSON.parse(frame)) },
    close () {},
    ping () {},
    pauseReading (resumed) {
      pauses++
      resume = resumed
    }
  }
  const connection = server.opened(socket, info)
  const request = (id: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'none' } })
  connection.message(request('before'), false)
  buffered = 1001
  for (const id of ['a', 'b', 'c']) connection.message(request(id), false)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same(frames.map(frame => frame.id), ['before'], 'only the request read before the bound was run')
  t.equal(pauses, 1, 'one pause, however many messages arrive during it')
  buffered = 0
  resume?.()
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same(frames.map(frame => [frame.id, frame.error.code]), [['before', -32001], ['a', -32001], ['b', -32001], ['c', -32001]], 'then each, in order')
  t.equal(pauses, 1, 'under the bound again: no new pause')
})

t.test('a socket that cannot pause is read as before', async t => {
  const server = makeConnectionServer({ maxBufferedBytes: 1000 })
  const frames: any[] = []
  const socket: WebSocketLike = { bufferedAmount: 5000, isOpen: true, send: (frame) => { frames.push(JSON.parse(frame)) }, close () {}, ping () {} }
  const connection = server.opened(socket, info)
  connection.message(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'none' } }), false)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same(frames.map(frame => frame.id), [1])
})

/** Answers of 128 KiB, 32 requests a round: 4 MiB a round, past what the kernel buffers for a paused reader (about 4 MiB). */
const ANSWER_TEXT = 'y'.repeat(128 * 1024)
const ROUND = 32
const MAX_BUFFERED = 1024 * 1024

for (const dialect of ['seed 000', 'a2a.v1'] as const) {
  t.test(`${dialect}: a client that sends and does not read stops being read; the server's buffer stays bounded; then every request is answered once`, async t => {
    const server = await startServer({
      // A paused client's backlog is read at once when it reads again: the in-flight
      // limits leave room for all of it, so that every request is answered with its task.
      websocket: { maxBufferedBytes: MAX_BUFFERED, maxInFlight: 1024, a2aV1: { maxStreams: 1024, rateLimit: false } },
      executor: {
        async execute (_context, events) {
          await events.artifact({ artifactId: 'big', parts: [{ text: ANSWER_TEXT }] })
          await events.completed()
        }
      }
    })
    t.teardown(() => server.close())
    const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('big') })).task
    // The GetTask calls the server started and finished, on both connections below.
    let started = 0
    let finished = 0
    const counting: A2AInterceptor = {
      before: (context) => { if (context.method === 'GetTask') started++ },
      onComplete: (context) => { if (context.method === 'GetTask') finished++ }
    }
    server.fastify.a2a.addInterceptor(counting)

    const v1 = dialect === 'a2a.v1'
    const open = async () => {
      const socket = v1 ? new WebSocket(v1Url(server.origin), 'a2a.v1') : new WebSocket(wsUrl(server.origin))
      await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject) })
      return socket
    }
    const getTask = (id: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: task.id }, ...(v1 ? { serviceParams: { 'a2a-version': '1.0' } } : {}) })
    const client = await open()
    const [serverSide] = server.fastify.websocketServer.clients
    if (serverSide === undefined) throw new Error('no server-side socket')
    const answers: any[] = []
    client.on('message', (data) => answers.push(JSON.parse(data.toString())))

    // A second connection: its round trip lets the server read whatever it would read of the first.
    const other = await open()
    t.teardown(() => { client.terminate(); other.terminate() })
    let barriers = 0
    const roundTrip = async () => {
      const id = `barrier-${++barriers}`
      const answered = new Promise<any>(resolve => other.on('message', function listener (data) {
        const frame = JSON.parse(data.toString())
        if (frame.id !== id) return
        other.off('message', listener)
        resolve(frame)
      }))
      other.send(getTask(id))
      return Buffer.byteLength(JSON.stringify(await answered))
    }
    // A frame of the server's: the answer, with a WebSocket header of at most 10 bytes.
    const frameBytes = await roundTrip() + 10

    client.pause()
    const sent: string[] = []
    const sendRound = () => {
      for (let i = 0; i < ROUND; i++) {
        const id = `r${sent.length}`
        sent.push(id)
        client.send(getTask(id))
      }
    }
    // Rounds until the server pauses: each is read and answered while what is buffered is under the bound.
    for (let round = 0; round < 20 && !serverSide.isPaused; round++) {
      sendRound()
      await roundTrip()
      await eventually(() => started === finished)
    }
    t.ok(serverSide.isPaused, 'the server stopped reading the client')
    // The requests of the client's read, at a point where every call started has finished.
    const read = started - barriers
    const buffered = serverSide.bufferedAmount
    t.ok(read < sent.length, `${read} of ${sent.length} requests read`)
    t.ok(buffered > MAX_BUFFERED && buffered <= MAX_BUFFERED + ROUND * frameBytes,
      `${buffered} bytes buffered: past maxBufferedBytes by the answers of the requests read under it at most`)

    // More requests: none is read, nothing more is buffered.
    for (let round = 0; round < 3; round++) {
      sendRound()
      await roundTrip()
    }
    t.equal(started - barriers, read, 'no request read')
    t.ok(serverSide.bufferedAmount <= buffered, `${serverSide.bufferedAmount} bytes buffered`)

    // The client reads again: every request sent is answered, once, with its task.
    client.resume()
    await eventually(() => answers.length >= sent.length, 30_000)
    t.equal(answers.length, sent.length)
    t.same(answers.map(frame => frame.id).sort(), sent.slice().sort(), 'each id answered once')
    t.same(answers.filter(frame => frame.result?.id !== task.id || frame.result.artifacts[0].parts[0].text !== ANSWER_TEXT).map(frame => frame.id), [], 'each with the task')
    t.notOk(serverSide.isPaused, 'the server reads the client again')
    t.equal(started, sent.length + barriers, 'each request run once')
  })
}
