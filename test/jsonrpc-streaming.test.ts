// SendStreamingMessage and SubscribeToTask over JSON-RPC + SSE (spec §9, §3.2, §3.6):
// framing, ordering, stream ends, errors before and during a stream, subscriptions
// released when a client leaves.
import http from 'node:http'
import t from 'tap'
import { conformanceCard } from '../examples/agent.js'
import { EventQueue } from '../lib/handler/event-queue.js'
import { MemoryTaskStore } from '../lib/store/memory.js'
import { call, eventually, openSse, parseSse, result, startServer, stream, userMessage, V1 } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const url = server.endpoint
const bus = server.fastify.a2a.bus

t.test('stream 3: task, working, three chunks, completed, each a full JSON-RPC response', async t => {
  const { status, contentType, events } = await stream(url, 'SendStreamingMessage', { message: userMessage('stream 3') }, V1, 'st-1')
  t.equal(status, 200)
  t.match(contentType, /^text\/event-stream/)
  t.same(events.map(e => e.data.id), Array(6).fill('st-1'), 'every event carries the id sent')
  t.ok(events.every(e => e.event === undefined && e.data.jsonrpc === '2.0'), 'each a plain event holding a JSON-RPC 2.0 response')
  const results = events.map(e => e.data.result)
  const task = results[0].task
  t.equal(task.status.state, 'TASK_STATE_SUBMITTED')
  t.same(results.slice(1), [
    { statusUpdate: { taskId: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_WORKING', timestamp: results[1].statusUpdate.status.timestamp } } },
    { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 1' }] } } },
    { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 2' }] }, append: true } },
    { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 3' }] }, append: true, lastChunk: true } },
    { statusUpdate: { taskId: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_COMPLETED', timestamp: results[5].statusUpdate.status.timestamp } } }
  ])
  const stored = await result(url, 'GetTask', { id: task.id })
  t.same(stored.artifacts, [{ artifactId: 'stream', parts: [{ text: 'chunk 1' }, { text: 'chunk 2' }, { text: 'chunk 3' }] }], 'chunks appended in order')
})

t.test('a direct message reply is the one event of its stream', async t => {
  const { events } = await stream(url, 'SendStreamingMessage', { message: userMessage('message yo') })
  t.equal(events.length, 1)
  t.same(events[0]?.data.result.message.parts, [{ text: 'yo' }])
})

t.test("an agent message on a task goes into its history, not onto its streams: after the task a stream carries status and artifact updates only (spec §3.2)", async t => {
  const chatty = await startServer({
    executor: {
      async execute (_context, events) {
        await events.working()
        await events.message('thinking aloud')
        await events.artifact({ artifactId: 'a', parts: [{ text: 'answer' }] })
        await events.completed()
      }
    }
  })
  t.teardown(() => chatty.close())
  const { events } = await stream(chatty.endpoint, 'SendStreamingMessage', { message: userMessage('go') })
  const results = events.map(e => e.data.result)
  t.same(results.map(r => Object.keys(r)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.equal(results.at(-1).statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  const stored = await result(chatty.endpoint, 'GetTask', { id: results[0].task.id })
  t.same(stored.history.map((m: any) => [m.role, m.parts[0].text]), [['ROLE_USER', 'go'], ['ROLE_AGENT', 'thinking aloud']])
  t.equal(stored.history[1].taskId, stored.id)
})

t.test('the stream that starts a turn ends at an interrupted state', async t => {
  const { events } = await stream(url, 'SendStreamingMessage', { message: userMessage('input') })
  t.same(events.map(e => Object.keys(e.data.result)[0]), ['task', 'statusUpdate'])
  t.equal(events[1]?.data.result.statusUpdate.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const taskId = events[0]?.data.result.task.id
  const resumed = await stream(url, 'SendStreamingMessage', { message: userMessage('more', { taskId }) })
  const first = resumed.events[0]?.data.result.task
  t.equal(first.status.state, 'TASK_STATE_INPUT_REQUIRED', 'a resumed turn starts with the current snapshot')
  t.equal(first.history.at(-1).parts[0].text, 'more', 'the snapshot holds the new message')
  t.equal(resumed.events.at(-1)?.data.result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
})

t.test('at AUTH_REQUIRED the stream stays open while the executor waits for credentials; a blocking call returns', async t => {
  let credentialsArrive = () => {}
  const authServer = await startServer({
    executor: {
      async execute (_context, events) {
        const arrived = new Promise<void>(resolve => { credentialsArrive = resolve })
        await events.authRequired('sign in first')
        await arrived
        await events.working()
        await events.completed()
      }
    }
  })
  t.teardown(() => authServer.close())
  const streamed = stream(authServer.endpoint, 'SendStreamingMessage', { message: userMessage('x') })
  await eventually(() => authServer.fastify.a2a.handler.openStreams === 1 && authServer.fastify.a2a.handler.activeTasks === 1)
  const task = (await result(authServer.endpoint, 'ListTasks', {})).tasks[0]
  await eventually(async () => (await result(authServer.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_AUTH_REQUIRED')
  t.equal(authServer.fastify.a2a.handler.openStreams, 1, 'the stream is still open at AUTH_REQUIRED')
  credentialsArrive()
  const { events } = await streamed
  const results = events.map(e => e.data.result)
  t.same(results.map(r => r.statusUpdate?.status.state ?? Object.keys(r)[0]),
    ['task', 'TASK_STATE_AUTH_REQUIRED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'])
  t.same(results[1].statusUpdate.status.message.parts, [{ text: 'sign in first' }])

  const blocking = result(authServer.endpoint, 'SendMessage', { message: userMessage('y') })
  const answered = await Promise.race([blocking, new Promise(resolve => setTimeout(resolve, 5000, 'no answer').unref())])
  t.equal((answered as any).task?.status.state, 'TASK_STATE_AUTH_REQUIRED', 'a blocking SendMessage returns at AUTH_REQUIRED')
  credentialsArrive()
})

t.test('errors found before the first event are a plain JSON-RPC error response', async t => {
  const unknown = await stream(url, 'SendStreamingMessage', { message: userMessage('x', { taskId: 'missing' }) })
  t.match(unknown.contentType, /^application\/json/)
  t.equal(unknown.body.error.code, -32001)
  const invalid = await stream(url, 'SubscribeToTask', {})
  t.equal(invalid.body.error.code, -32602)
  const done = (await result(url, 'SendMessage', { message: userMessage('x') })).task
  const terminal = await stream(url, 'SubscribeToTask', { id: done.id })
  t.same(terminal.body.error.data[0].reason, 'UNSUPPORTED_OPERATION')
  t.equal(terminal.body.error.code, -32004)
  const toTerminal = await stream(url, 'SendStreamingMessage', { message: userMessage('x', { taskId: done.id }) })
  t.equal(toTerminal.body.error.code, -32004)
  t.equal(server.fastify.a2a.handler.openStreams, 0, 'a stream refused before its first event is not left open')
})

t.test('a subscription whose snapshot cannot be read closes with its stream and its bus listener', async t => {
  const taskStore = new MemoryTaskStore()
  const failing = await startServer({ taskStore })
  t.teardown(() => failing.close())
  const task = (await result(failing.endpoint, 'SendMessage', { message: userMessage('input') })).task
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  taskStore.getVersioned = async () => { throw new Error('store down') }
  const refused = await stream(failing.endpoint, 'SubscribeToTask', { id: task.id })
  t.match(refused.contentType, /^application\/json/)
  t.equal(refused.body.error.code, -32603)
  t.equal(failing.fastify.a2a.handler.openStreams, 0, 'the stream is closed')
  t.equal(failing.fastify.a2a.bus.listenerCount(), 0, 'the bus listener is removed')
})

t.test('streaming not declared → -32004 for both streaming methods', async t => {
  const noStreaming = await startServer({ card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, streaming: false } } })
  t.teardown(() => noStreaming.close())
  const sent = await stream(noStreaming.endpoint, 'SendStreamingMessage', { message: userMessage('x') })
  t.same(sent.body.error, {
    code: -32004,
    message: 'Unsupported operation: streaming is not supported',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org' }]
  })
  t.equal((await stream(noStreaming.endpoint, 'SubscribeToTask', { id: 'x' })).body.error.code, -32004)
  // The capability is told before the params are read: what is wrong with them does not matter.
  t.equal((await stream(noStreaming.endpoint, 'SendStreamingMessage', {})).body.error.code, -32004, 'no message')
  t.equal((await stream(noStreaming.endpoint, 'SubscribeToTask', { id: 7 })).body.error.code, -32004, 'an id that is no string')
})

const openStream = (method: string, params: unknown, count: number) => openSse(url, 'POST', { jsonrpc: '2.0', id: 'open', method, params }, count)

t.test('SubscribeToTask: first the current snapshot, then live events; several subscribers see the same', async t => {
  const { result: { task } } = await call(url, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(url, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const one = await openStream('SubscribeToTask', { id: task.id }, 1)
  const two = await openStream('SubscribeToTask', { id: task.id }, 1)
  for (const sub of [one, two]) {
    t.equal(sub.events[0].data.result.task.id, task.id)
    t.equal(sub.events[0].data.result.task.status.state, 'TASK_STATE_WORKING')
  }
  t.equal(bus.listenerCount(), 2)
  await result(url, 'CancelTask', { id: task.id })
  await Promise.all([one.ended, two.ended])
  for (const sub of [one, two]) {
    t.same(sub.events.map(e => e.data.result.statusUpdate?.status.state ?? 'task'), ['task', 'TASK_STATE_CANCELED'])
  }
  await eventually(() => bus.listenerCount() === 0)
})

t.test('a client that disconnects mid-stream releases its subscription; the task goes on', async t => {
  const { events, disconnect } = await openStream('SendStreamingMessage', { message: userMessage('hold') }, 2)
  const taskId = events[0].data.result.task.id
  t.equal(bus.listenerCount(), 1)
  disconnect()
  await eventually(() => bus.listenerCount() === 0)
  t.equal((await result(url, 'GetTask', { id: taskId })).status.state, 'TASK_STATE_WORKING', 'the task outlives its stream')
  t.equal((await result(url, 'CancelTask', { id: taskId })).status.state, 'TASK_STATE_CANCELED')
})

t.test('a reader that falls behind gets a last error event with STREAM_LAGGED; other streams flow; memory stays bounded', async t => {
  // 400 chunks of 256 KiB (100 MiB) are more than the kernel buffers for a paused reader
  // (Linux grows a loopback receive buffer up to 32 MiB); each replaces the last, so the
  // store holds one.
  const chunk = 'x'.repeat(256 * 1024)
  const lagging = await startServer({
    maxQueuedEvents: 8,
    executor: {
      async execute (context, events) {
        const big = context.message.parts[0]?.text === 'big'
        for (let i = 0; i < (big ? 400 : 3); i++) await events.artifact({ artifactId: 'a', parts: [{ text: big ? chunk : `small ${i}` }] }, { append: !big && i > 0 })
        await events.completed()
      }
    }
  })
  t.teardown(() => lagging.close())
  // The bound, measured: events a stream's queue holds, and bytes a response has unsent.
  let queuePeak = 0
  const push = EventQueue.prototype.push
  EventQueue.prototype.push = function (this: EventQueue<unknown>, item: unknown) {
    push.call(this, item)
    queuePeak = Math.max(queuePeak, this.buffered)
  }
  t.teardown(() => { EventQueue.prototype.push = push })
  let unsentPeak = 0
  let largestWrite = 0
  let highWaterMark = 0
  lagging.fastify.server.on('request', (_request: http.IncomingMessage, response: http.ServerResponse) => {
    const write = response.write
    response.write = function (this: http.ServerResponse, data: string) {
      const written = (write as (data: string) => boolean).call(this, data)
      largestWrite = Math.max(largestWrite, Buffer.byteLength(data))
      unsentPeak = Math.max(unsentPeak, this.writableLength)
      highWaterMark = this.writableHighWaterMark
      return written
    } as typeof response.write
  })

  const body = JSON.stringify({ jsonrpc: '2.0', id: 'lag', method: 'SendStreamingMessage', params: { message: userMessage('big') } })
  let resumeSlow!: () => void
  const slowResumed = new Promise<void>(resolve => { resumeSlow = resolve })
  const text = new Promise<string>((resolve, reject) => {
    const request = http.request(lagging.endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...V1 } }, (response) => {
      response.pause()
      void slowResumed.then(() => {
        let all = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => { all += chunk })
        response.on('end', () => resolve(all))
        response.resume()
      })
    })
    request.on('error', reject)
    request.end(body)
  })
  // The slow stream is dropped at its bound while its reader still reads nothing...
  await eventually(() => queuePeak === 8 && lagging.fastify.a2a.bus.listenerCount() === 0, 10000)
  // ...and meanwhile another stream on the same server flows to its end.
  const fast = await stream(lagging.endpoint, 'SendStreamingMessage', { message: userMessage('small') })
  t.same(fast.events.map(e => Object.keys(e.data.result)[0]), ['task', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  t.equal(fast.events.at(-1)?.data.result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  resumeSlow()
  const events = parseSse(await text)
  const last = events.at(-1)
  t.equal(last?.event, 'error')
  t.equal(last?.data.id, 'lag')
  t.equal(last?.data.error.code, -32603)
  t.equal(last?.data.error.data[0].reason, 'STREAM_LAGGED')
  t.equal(last?.data.error.data[0].domain, 'a2a-rust.com')
  t.match(last?.data.error.data[0].metadata.droppedEvents, /^\d+$/)
  t.ok(events.length < 402, 'events were dropped, not buffered without bound')
  t.equal(queuePeak, 8, 'the queue held maxQueuedEvents at most')
  t.ok(unsentPeak > 0 && unsentPeak <= highWaterMark + largestWrite, `unsent bytes peaked at ${unsentPeak}: one write past the ${highWaterMark}-byte high-water mark at most`)
  t.equal(lagging.fastify.a2a.bus.listenerCount(), 0)
  t.equal((await call(lagging.endpoint, 'GetTask', { id: events[0]?.data.result.task.id })).result.status.state, 'TASK_STATE_COMPLETED', 'the task went on')
})
