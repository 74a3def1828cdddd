// Seed 000 §4 and §5: streams as success frames carrying the request id, the
// stream_complete marker, failing streams, reconnection by SubscribeToTask, and a
// subscriber that falls behind ending with STREAM_LAGGED.
import t from 'tap'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { clientFrame, connect, frameReader, rawUpgrade, wsUrl } from './helpers/ws.js'

t.test('stream 3: every event in order with the request id, then exactly one stream_complete', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  const frames = await client.stream('SendStreamingMessage', { message: userMessage('stream 3') }, 'st')
  t.ok(frames.every(f => f.jsonrpc === '2.0' && f.id === 'st'))
  const results = frames.map(f => f.result)
  const task = results[0].task
  t.equal(task.status.state, 'TASK_STATE_SUBMITTED')
  t.same(results.slice(1).map(r => Object.keys(r)[0]), ['statusUpdate', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate', 'status'])
  t.same(results[4], { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 3' }] }, append: true, lastChunk: true } })
  t.equal(results[5].statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  t.same(frames.at(-1), { jsonrpc: '2.0', id: 'st', result: { status: 'stream_complete' } })
  t.same(await client.quiet(50), [], 'nothing after the marker')
})

t.test('a direct message reply: one frame, then the marker', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  const frames = await client.stream('SendStreamingMessage', { message: userMessage('message hello') })
  t.equal(frames.length, 2)
  t.same(frames[0].result.message.parts, [{ text: 'hello' }])
  t.same(frames[1].result, { status: 'stream_complete' })
})

t.test('streams of different requests interleave on one connection', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  const [a, b] = await Promise.all([
    client.stream('SendStreamingMessage', { message: userMessage('stream 20') }, 'a'),
    client.stream('SendStreamingMessage', { message: userMessage('stream 20') }, 'b')
  ])
  t.equal(a.length, 24)
  t.equal(b.length, 24)
  t.same(a.slice(2, 22).map(f => f.result.artifactUpdate.artifact.parts[0].text), Array.from({ length: 20 }, (_, i) => `chunk ${i + 1}`))
})

t.test('a stream that fails ends with an error frame for its id and no marker', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  const frames = await client.stream('SubscribeToTask', { id: 'missing' }, 'sub')
  t.same(frames, [{
    jsonrpc: '2.0', id: 'sub', error: { code: -32001, message: 'Task not found: missing', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'missing' } }] }
  }])
  t.same(await client.quiet(50), [])
})

t.test('reconnection: a new connection calls SubscribeToTask and gets the current snapshot first', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const first = await connect(wsUrl(server.origin))
  first.send({ jsonrpc: '2.0', id: 'h', method: 'SendStreamingMessage', params: { message: userMessage('hold') } })
  const task = (await first.next()).result.task
  await first.next()
  first.socket.terminate()
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 0)
  const second = await connect(wsUrl(server.origin), { headers: { 'Last-Event-ID': '1' } })
  t.teardown(() => second.close())
  const subscription = second.stream('SubscribeToTask', { id: task.id }, 'again')
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 1)
  await second.request('CancelTask', { id: task.id })
  const frames = await subscription
  t.equal(frames[0].result.task.id, task.id)
  t.equal(frames[0].result.task.status.state, 'TASK_STATE_WORKING', 'the snapshot, whatever came before')
  t.equal(frames[1].result.statusUpdate.status.state, 'TASK_STATE_CANCELED')
  t.same(frames[2].result, { status: 'stream_complete' })
})

t.test('a dropped connection releases its streams; the task goes on', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  client.send({ jsonrpc: '2.0', id: 'h', method: 'SendStreamingMessage', params: { message: userMessage('hold') } })
  client.send({ jsonrpc: '2.0', id: 'slow', method: 'SendMessage', params: { message: userMessage('sleep 2000') } })
  const task = (await client.next()).result.task
  t.equal(server.fastify.a2a.bus.listenerCount(), 2, 'the stream and the blocking call listen')
  client.socket.terminate()
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 0)
  const checker = await connect(wsUrl(server.origin))
  t.teardown(() => checker.close())
  t.equal((await checker.request('GetTask', { id: task.id })).result.status.state, 'TASK_STATE_WORKING', 'the held task still runs')
  // The unary call sleeps 2 s, so that it is still in flight at the count above.
  await eventually(async () => (await checker.request('ListTasks', { status: 'TASK_STATE_COMPLETED' })).result.totalSize === 1, 5000)
  t.pass('the unary call in flight finished without a socket to write to')
  await checker.request('CancelTask', { id: task.id })
})

t.test('a subscriber that falls behind ends with STREAM_LAGGED; other connections are unaffected; the buffer stays bounded', async t => {
  // 1,000 frames of 64 KiB (62.5 MiB) are more than the kernel buffers for a paused reader
  // (Linux grows a loopback receive buffer up to 32 MiB); each replaces the last, so the
  // store holds one.
  const chunk = 'y'.repeat(64 * 1024)
  const server = await startServer({
    websocket: { maxBufferedBytes: 256 * 1024 },
    executor: {
      async execute (context, events) {
        const count = Number(context.message.parts[0]?.text)
        for (let i = 0; i < count; i++) await events.artifact({ artifactId: 'big', parts: [{ text: chunk }] })
        await events.completed()
      }
    }
  })
  t.teardown(() => server.close())
  // The bound, measured: the bytes each server-side socket holds unsent after every frame it is given.
  let bufferedPeak = 0
  let largestFrame = 0
  server.fastify.websocketServer.on('connection', (socket) => {
    const send = socket.send
    socket.send = function (this: typeof socket, data: string) {
      ;(send as (data: string) => void).call(this, data)
      largestFrame = Math.max(largestFrame, Buffer.byteLength(data))
      bufferedPeak = Math.max(bufferedPeak, this.bufferedAmount)
    } as typeof socket.send
  })
  // The slow reader is a raw socket that stops reading (a ws client may resume its own
  // socket): the kernel's buffers fill, then the server's grows past the bound.
  const { socket: slow, rest } = await rawUpgrade(server.origin, [], '/?A2A-Version=1.0')
  const fast = await connect(wsUrl(server.origin))
  t.teardown(() => { slow.destroy(); fast.close() })
  slow.pause()
  slow.write(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'lagging', method: 'SendStreamingMessage', params: { message: userMessage('1000') } })))
  const fastFrames = await fast.stream('SendStreamingMessage', { message: userMessage('50') }, 'fine')
  t.equal(fastFrames.length, 53, 'the other connection got every event and the marker')
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 0, 10000)
  const reader = frameReader(slow, rest)
  slow.resume()
  const frames: any[] = []
  for (;;) {
    const frame = JSON.parse((await reader.next()).payload.toString())
    frames.push(frame)
    if (frame.error !== undefined || frame.result?.status === 'stream_complete') break
  }
  const last = frames.at(-1)
  t.equal(last.id, 'lagging')
  t.equal(last.error.code, -32603)
  t.match(last.error.message, /^Stream subscriber fell behind; \d+ events dropped$/)
  t.same(Object.keys(last.error.data[0]).sort(), ['@type', 'domain', 'metadata', 'reason'])
  t.equal(last.error.data[0].reason, 'STREAM_LAGGED')
  t.equal(last.error.data[0].domain, 'a2a-rust.com')
  t.match(last.error.data[0].metadata.droppedEvents, /^\d+$/)
  t.ok(frames.length < 1002, 'not every event was buffered')
  t.ok(bufferedPeak > 256 * 1024 && bufferedPeak <= 256 * 1024 + largestFrame, `buffered bytes peaked at ${bufferedPeak}: past maxBufferedBytes by one frame at most`)
  await new Promise(resolve => setTimeout(resolve, 100))
  t.same(reader.frames, [], 'a failed stream has no end marker')
  const task = frames[0].result.task
  await eventually(async () => (await fast.request('GetTask', { id: task.id })).result.status.state === 'TASK_STATE_COMPLETED')
  t.pass('the task went on to completion')
})
