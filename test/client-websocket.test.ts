// WebSocketTransport (seed 000) against a real server: upgrade headers, one connection
// multiplexing calls by generated ids, the pending-call limit, abort and timeout of unary
// calls and streams, the connect timeout, a dropped connection, close, and a reader slower
// than the socket.
import { createServer, type Socket } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import WebSocket from 'ws'
import {
  A2AClient, CallTimeoutError, ConnectionError, JsonRpcTransport, StreamIncompleteError, TooManyPendingError, WebSocketTransport,
  type StreamResponse
} from '../lib/client/index.js'
import { eventually, startServer, userMessage } from './helpers/server.js'

// gc() without --expose-gc on the command line: a flag set at run time, read in a new context.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const server = await startServer()
t.teardown(() => server.close())
const wsOrigin = server.origin.replace('http', 'ws')
/** Cancels tasks from outside the connection under test. */
const other = new A2AClient(new JsonRpcTransport({ url: server.endpoint }))

let connections = 0
server.fastify.websocketServer.on('connection', () => { connections++ })

function client (options: Partial<ConstructorParameters<typeof WebSocketTransport>[0]> = {}) {
  const transport = new WebSocketTransport({ url: wsOrigin, ...options })
  return { transport, client: new A2AClient(transport) }
}

/** The service parameters the agent saw (its `params` command). */
async function paramsSeen (a2a: A2AClient): Promise<Record<string, string>> {
  const answer = await a2a.sendMessage({ message: userMessage('params') })
  return answer.task?.artifacts?.[0]?.parts[0]?.data as Record<string, string>
}

/** Starts `hold` as a stream and returns it once its two first events (the task, then working) are read. */
async function heldStream (a2a: A2AClient, signal?: AbortSignal) {
  const events = a2a.sendStreamingMessage({ message: userMessage('hold') }, { signal })
  const first = await events.next()
  const second = await events.next()
  if (second.value?.statusUpdate?.status.state !== 'TASK_STATE_WORKING') throw new Error('the held task is not working')
  return { events, taskId: (first.value as StreamResponse).task!.id }
}

t.test('service parameters go as upgrade headers, A2A-Version 1.0 by default; no subprotocol is offered', async t => {
  const { client: a2a } = client({ serviceParams: { 'X-Trace': 'abc', Authorization: 'Bearer t' } })
  t.teardown(() => a2a.close())
  const seen = await paramsSeen(a2a)
  t.equal(seen['a2a-version'], '1.0')
  t.equal(seen['x-trace'], 'abc')
  t.equal(seen.authorization, 'Bearer t')
  t.equal(seen[':path'], '/')
  t.equal(seen['sec-websocket-protocol'], undefined)

  const { client: pinned } = client({ serviceParams: { 'a2a-version': '1.0.1' } })
  t.teardown(() => pinned.close())
  t.equal((await paramsSeen(pinned))['a2a-version'], '1.0.1', "the caller's own A2A-Version wins, whatever its case")
})

t.test('one connection carries concurrent calls; each answer reaches its caller', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const before = connections
  const texts = Array.from({ length: 12 }, (_, i) => i % 2 === 0 ? `echo ${i}` : `sleep ${30 - i}`)
  const answers = await Promise.all(texts.map(text => a2a.sendMessage({ message: userMessage(text) })))
  t.same(answers.map(answer => answer.task?.artifacts?.[0]?.parts[0]?.text), texts.map(text => text.startsWith('sleep') ? `slept ${text.slice(6)}` : text))
  t.equal(connections - before, 1)
  t.equal(transport.pending, 0)
  const [one, two] = await Promise.all([paramsSeen(a2a), paramsSeen(a2a)])
  t.equal(one?.[':connection-id'], two?.[':connection-id'])
})

t.test('past 64 pending calls a call is refused at once; a stream that ends frees its slot', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const held = await Promise.all(Array.from({ length: 64 }, () => heldStream(a2a)))
  t.equal(transport.pending, 64)
  const refused = await a2a.getTask({ id: held[0]!.taskId }).catch((error: unknown) => error)
  t.type(refused, TooManyPendingError)
  t.match(refused, { limit: 64, retryable: true, message: /64 calls are already pending/ })
  const refusedStream = a2a.subscribeToTask({ id: held[0]!.taskId })
  await t.rejects(refusedStream.next(), TooManyPendingError)
  t.same(await refusedStream.next(), { value: undefined, done: true })

  await other.cancelTask({ id: held[0]!.taskId })
  const rest: StreamResponse[] = []
  for await (const event of held[0]!.events) rest.push(event)
  t.same(rest.map(event => event.statusUpdate?.status.state), ['TASK_STATE_CANCELED'])
  await eventually(() => transport.pending === 63)
  t.equal((await a2a.getTask({ id: held[0]!.taskId })).status.state, 'TASK_STATE_CANCELED')
})

t.test('maxPending is an option', async t => {
  const { transport, client: a2a } = client({ maxPending: 2 })
  t.teardown(() => a2a.close())
  await Promise.all([heldStream(a2a), heldStream(a2a)])
  await t.rejects(a2a.listTasks(), { name: 'TooManyPendingError', limit: 2 })
  t.equal(transport.pending, 2)
})

t.test('aborting a unary call rejects it with the reason; its late answer is dropped', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const controller = new AbortController()
  const contextId = `abort-unary-${Date.now()}`
  const call = a2a.sendMessage({ message: userMessage('hold', { contextId }) }, { signal: controller.signal })
  await eventually(async () => (await other.listTasks({ contextId })).tasks[0]?.status.state === 'TASK_STATE_WORKING')
  controller.abort()
  await t.rejects(call, { name: 'AbortError' })
  t.equal(transport.pending, 1, 'the server still runs it')
  const [task] = (await other.listTasks({ contextId })).tasks
  await other.cancelTask({ id: task!.id })
  await eventually(() => transport.pending === 0)
  t.equal((await a2a.getTask({ id: task!.id })).status.state, 'TASK_STATE_CANCELED', 'the connection goes on')

  const already = new AbortController()
  already.abort(new Error('not today'))
  await t.rejects(a2a.getTask({ id: task!.id }, { signal: already.signal }), { message: 'not today' })
})

t.test('aborting a stream ends its iterator at once; the frames that follow for its id are dropped', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const controller = new AbortController()
  const { events, taskId } = await heldStream(a2a, controller.signal)
  const waiting = events.next()
  controller.abort()
  await t.rejects(waiting, { name: 'AbortError' })
  t.same(await events.next(), { value: undefined, done: true })
  t.equal(transport.pending, 1, 'seed 000 cannot stop the stream on the server')
  await other.cancelTask({ id: taskId })
  await eventually(() => transport.pending === 0)
  t.same(await events.next(), { value: undefined, done: true })
})

t.test('leaving a stream loop early stops reading it: what was queued and what follows are dropped', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const events = a2a.sendStreamingMessage({ message: userMessage('hold') })
  let taskId: string | undefined
  for await (const event of events) {
    taskId = event.task?.id
    break
  }
  t.same(await events.next(), { value: undefined, done: true }, 'the loop\'s end closed the iterator')
  t.equal(transport.pending, 1, 'seed 000 cannot stop the stream on the server')
  await other.cancelTask({ id: taskId! })
  await eventually(() => transport.pending === 0)
  t.same(await events.next(), { value: undefined, done: true }, 'the WORKING and CANCELED events were not queued for it')
  t.equal((await a2a.getTask({ id: taskId! })).status.state, 'TASK_STATE_CANCELED', 'the connection goes on')
})

t.test('a timeout gives a unary call or a stream up with CallTimeoutError', async t => {
  const { client: a2a } = client({ timeout: 50 })
  t.teardown(() => a2a.close())
  await t.rejects(a2a.sendMessage({ message: userMessage('hold') }), { name: 'CallTimeoutError', timeoutMs: 50, retryable: true })
  // Long enough for the request and two events on a loaded machine; the task holds for ever.
  const events = a2a.sendStreamingMessage({ message: userMessage('hold') }, { timeout: 1000 })
  const { task } = (await events.next()).value ?? {}
  t.equal(task?.status.state, 'TASK_STATE_SUBMITTED')
  const { statusUpdate } = (await events.next()).value ?? {}
  t.same([statusUpdate?.taskId, statusUpdate?.status.state], [task?.id, 'TASK_STATE_WORKING'])
  await t.rejects(events.next(), CallTimeoutError)
  t.equal((await a2a.sendMessage({ message: userMessage('quick') }, { timeout: 5000 })).task?.status.state, 'TASK_STATE_COMPLETED')
})

t.test('an upgrade that never completes fails with the connect timeout', async t => {
  const silent = createServer(() => {})
  const sockets: Socket[] = []
  silent.on('connection', socket => sockets.push(socket))
  await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { sockets.forEach(socket => socket.destroy()); silent.close() })
  const port = (silent.address() as { port: number }).port
  const { client: a2a } = client({ url: `ws://127.0.0.1:${port}/`, connectTimeout: 100 })
  const error = await a2a.getTask({ id: 'x' }).catch((thrown: unknown) => thrown)
  t.type(error, ConnectionError)
  t.match(error, { retryable: true, message: `the WebSocket upgrade to ws://127.0.0.1:${port}/ did not complete within 100 ms` })
})

t.test('a dropped connection fails pending calls (retryable) and cuts streams (incomplete); the next call reconnects', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const contextId = `drop-${Date.now()}`
  const unary = a2a.sendMessage({ message: userMessage('hold', { contextId }) })
  const { events, taskId } = await heldStream(a2a)
  await eventually(async () => (await other.listTasks({ contextId })).tasks.length === 1)
  const before = connections
  for (const socket of server.fastify.websocketServer.clients) socket.terminate()

  const failed = await unary.catch((error: unknown) => error)
  t.type(failed, ConnectionError)
  t.notOk(failed instanceof StreamIncompleteError)
  t.match(failed, { retryable: true, closeCode: 1006, message: 'the connection closed (1006) before the answer arrived' })
  const cut = await events.next().catch((error: unknown) => error)
  t.type(cut, StreamIncompleteError)
  t.match(cut, { retryable: true, closeCode: 1006, taskId, received: 2 })
  t.same(await events.next(), { value: undefined, done: true })
  t.equal(transport.pending, 0)

  t.equal((await a2a.getTask({ id: taskId })).status.state, 'TASK_STATE_WORKING')
  t.equal(connections - before, 1, 'a new connection')
  await other.cancelTask({ id: taskId })
})

t.test('a message over the server\'s size limit: it closes the connection (1009), and the call is not worth retrying', async t => {
  const { client: a2a } = client()
  t.teardown(() => a2a.close())
  const error = await a2a.sendMessage({ message: userMessage('x'.repeat(4 * 1024 * 1024 + 1)) }).catch((thrown: unknown) => thrown)
  t.type(error, ConnectionError)
  t.match(error, { closeCode: 1009, retryable: false })
  t.equal((await a2a.sendMessage({ message: userMessage('small') })).task?.status.state, 'TASK_STATE_COMPLETED', 'the next call reconnects')
})

t.test('close() fails what is pending (not retryable) and refuses later calls', async t => {
  const { client: a2a } = client()
  const { events, taskId } = await heldStream(a2a)
  await a2a.close()
  await t.rejects(events.next(), { name: 'ConnectionError', retryable: false, message: 'the transport was closed before the stream ended' })
  await t.rejects(a2a.getTask({ id: taskId }), { name: 'ConnectionError', retryable: false, message: 'the transport is closed' })
  await other.cancelTask({ id: taskId })
})

t.test('an injected WebSocket class is the one used', async t => {
  let constructed = 0
  class CountingWebSocket extends WebSocket {
    constructor (...args: ConstructorParameters<typeof WebSocket>) {
      super(...args)
      constructed++
    }
  }
  const { client: a2a } = client({ WebSocket: CountingWebSocket, serviceParams: { 'X-Injected': 'yes' } })
  t.teardown(() => a2a.close())
  t.equal((await paramsSeen(a2a))['x-injected'], 'yes')
  t.equal(constructed, 1)
})

t.test('next() called again before the first settled: each call gets its own event, in order', async t => {
  const { client: a2a } = client()
  t.teardown(() => a2a.close())
  const events = a2a.sendStreamingMessage({ message: userMessage('stream 2') })
  const [first, second, third, fourth, end] = await Promise.all([events.next(), events.next(), events.next(), events.next(), events.next()])
  t.equal(first.value?.task?.status.state, 'TASK_STATE_SUBMITTED', 'the task')
  t.same([second.value?.statusUpdate?.taskId, second.value?.statusUpdate?.status.state], [first.value?.task?.id, 'TASK_STATE_WORKING'])
  t.same([third.value?.artifactUpdate?.artifact.parts, fourth.value?.artifactUpdate?.artifact.parts], [[{ text: 'chunk 1' }], [{ text: 'chunk 2' }]])
  const last = (await events.next())
  t.equal(end.value?.statusUpdate?.status.state, 'TASK_STATE_COMPLETED')
  t.same(last, { value: undefined, done: true })
})

t.test('a reader slower than the socket: 20,000 events buffered are read whole, in order, each let go of once read, none by an Array shift()', async t => {
  const { transport, client: a2a } = client()
  t.teardown(() => a2a.close())
  const count = 20_000
  const events = a2a.sendStreamingMessage({ message: userMessage(`stream ${count}`) })
  t.equal((await events.next()).value?.task?.status.state, 'TASK_STATE_SUBMITTED')
  // Nothing more read until the whole stream has arrived: its end frees the call.
  await eventually(() => transport.pending === 0, 30_000)
  const refs: Array<WeakRef<object>> = []
  // The reader keeps each event's text alone: what it read is then held by nothing of the test's.
  const readOne = async () => {
    const { value } = await events.next()
    if (value === undefined) return undefined
    refs.push(new WeakRef(value))
    return value.artifactUpdate?.artifact.parts[0]?.text ?? value.statusUpdate?.status.state
  }
  // Array.prototype.shift() copies an array longer than about 16K items at each call: the
  // buffer is not to be drained with it (a short queue's shift is cheap, and allowed).
  const { shift } = Array.prototype
  let longestShifted = 0
  Array.prototype.shift = function (this: unknown[]) {
    longestShifted = Math.max(longestShifted, this.length)
    return shift.call(this)
  }
  const read: Array<string | undefined> = []
  let alive: number
  try {
    for (let i = 0; i < count / 2; i++) read.push(await readOne())
    await new Promise(resolve => setImmediate(resolve))
    gc()
    alive = refs.filter(ref => ref.deref() !== undefined).length
    for (let text = await readOne(); text !== undefined; text = await readOne()) read.push(text)
  } finally {
    Array.prototype.shift = shift
  }
  t.equal(alive, 0, 'no event read is kept alive while the rest wait')
  const expected = ['TASK_STATE_WORKING', ...Array.from({ length: count }, (_, i) => `chunk ${i + 1}`), 'TASK_STATE_COMPLETED']
  t.equal(read.length, expected.length, 'working, the chunks, completed')
  t.ok(read.every((text, i) => text === expected[i]), 'every event, in order')
  t.ok(longestShifted <= 100, `the longest array shift() was called on held ${longestShifted}`)
})
