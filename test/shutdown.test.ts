// Graceful shutdown (issue 9 §5): fastify.close() refuses new work, lets work in progress
// finish within completionGrace, cancels what is left and gives its executors taskGrace,
// abandons an executor that ignores its signal, ends every stream, closes every WebSocket
// with 1001 and reports what it did. Tasks in every phase, streams over every binding.
import http from 'node:http'
import v8 from 'node:v8'
import t from 'tap'
import { conformanceAgent } from '../examples/agent.js'
import type { AgentExecutor, PushSender } from '../lib/index.js'
import { MemoryTaskStore } from '../lib/store/memory.js'
import { startAgentProcess } from './helpers/agent-process.js'
import { eventually, openSse, post, result, startServer, userMessage, V1 } from './helpers/server.js'
import { connect, refusedUpgrade, wsUrl } from './helpers/ws.js'
import { liveTimeouts } from './helpers/timers.js'
import { restStream } from './helpers/rest.js'
import { startReceiver } from './helpers/webhook.js'

// v8.queryObjects (Node 20.13 on): how many objects of a constructor the heap holds, after a full GC.
const queryObjects = (v8 as { queryObjects?: (ctor: Function, options: { format: 'count' }) => number }).queryObjects
const heapObjects = (ctor: Function): number => (queryObjects as NonNullable<typeof queryObjects>)(ctor, { format: 'count' })

/** The conformance agent, plus `stubborn`: working, then it never ends and ignores its signal. */
const agent: AgentExecutor = {
  async execute (context, events) {
    if (context.message.parts[0]?.text !== 'stubborn') return await conformanceAgent.execute(context, events)
    await events.working()
    await new Promise(() => {})
  }
}

// Worth another attempt (another instance, or this one restarted): the RetryInfo says when.
const unavailable = {
  code: -32603,
  message: 'Service unavailable: the server is shutting down',
  data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
}

t.test('fastify.close() with tasks in every phase and a stream open over every binding', async t => {
  const server = await startServer({ executor: agent, shutdown: { completionGrace: 2000, taskGrace: 300 } })
  const { endpoint, origin, fastify } = server
  const { handler } = fastify.a2a

  const completed = (await result(endpoint, 'SendMessage', { message: userMessage('done already') })).task
  const waiting = (await result(endpoint, 'SendMessage', { message: userMessage('input') })).task
  t.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED')
  // A subscription no task end closes: shutdown ends it.
  const subscription = await openSse(endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: waiting.id } }, 1)
  // Working, with a stream open on each binding.
  const jsonRpcStream = await openSse(endpoint, 'POST', { jsonrpc: '2.0', id: 'rpc', method: 'SendStreamingMessage', params: { message: userMessage('hold') } }, 2)
  const restStream = await openSse(`${origin}/message:stream`, 'POST', { message: userMessage('hold') }, 2)
  const ws = await connect(wsUrl(origin))
  const wsFrames = ws.stream('SendStreamingMessage', { message: userMessage('hold') }, 'ws')
  // A call in flight that finishes within completionGrace, and an executor that ignores its signal.
  const sleeping = post(endpoint, { jsonrpc: '2.0', id: 'sleep', method: 'SendMessage', params: { message: userMessage('sleep 500') } })
  const stubborn = (await result(endpoint, 'SendMessage', { message: userMessage('stubborn'), configuration: { returnImmediately: true } })).task
  await eventually(() => handler.runningExecutions === 5)
  const bystander = await connect(wsUrl(origin))

  const closing = server.close()
  await eventually(async () => (await bystander.request('GetTask', { id: completed.id })).error !== undefined)
  t.same((await bystander.request('GetTask', { id: completed.id }, 'late')), { jsonrpc: '2.0', id: 'late', error: unavailable }, 'a new call on an open connection is refused')
  const upgrade = await refusedUpgrade(wsUrl(origin))
  t.same({ status: upgrade.status, type: upgrade.headers['content-type'], retryAfter: upgrade.headers['retry-after'], body: upgrade.body }, {
    status: 503,
    type: 'application/a2a+json; charset=utf-8',
    retryAfter: '1',
    body: { error: { code: 503, status: 'UNAVAILABLE', message: 'Service unavailable: the server is shutting down', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }] } }
  }, 'a new upgrade is refused with the head and body of every other refusal')
  const newRequest = await post(endpoint, { jsonrpc: '2.0', id: 'new', method: 'GetTask', params: { id: completed.id } })
  t.equal(newRequest.status, 503, 'a new HTTP request is refused')

  t.equal((await sleeping).body.result.task.status.state, 'TASK_STATE_COMPLETED', 'the call in flight finished')
  await Promise.all([jsonRpcStream.ended, restStream.ended, subscription.ended])
  t.same(jsonRpcStream.events.map(e => e.data.result.statusUpdate?.status.state ?? 'task'), ['task', 'TASK_STATE_WORKING', 'TASK_STATE_CANCELED'], 'JSON-RPC SSE: cancelled, then ended')
  t.same(restStream.events.map(e => e.data.statusUpdate?.status.state ?? 'task'), ['task', 'TASK_STATE_WORKING', 'TASK_STATE_CANCELED'], 'REST SSE: cancelled, then ended')
  t.same(subscription.events.map(e => e.event ?? 'data'), ['data', 'error'])
  t.same(subscription.events[1]?.data, { jsonrpc: '2.0', id: 'sub', error: unavailable }, 'a subscription to a waiting task ends with Unavailable')
  const frames = await wsFrames
  t.same(frames.map(f => f.result.statusUpdate?.status.state ?? f.result.status ?? 'task'), ['task', 'TASK_STATE_WORKING', 'TASK_STATE_CANCELED', 'stream_complete'], 'WebSocket: cancelled, then the marker')
  t.same(await ws.closed, { code: 1001, reason: 'server shutting down' })
  t.same(await bystander.closed, { code: 1001, reason: 'server shutting down' })
  await closing

  t.same(fastify.a2a.lastShutdownReport, { drained: 1, cancelled: 3, abandoned: 1, streamsEnded: 1, webSocketsClosed: 2 })
  const { taskStore } = fastify.a2a
  const stateOf = async (id: string) => (await taskStore.get(id, { tenant: '' }))?.status
  t.equal((await stateOf(completed.id))?.state, 'TASK_STATE_COMPLETED', 'a completed task is untouched')
  t.equal((await stateOf(waiting.id))?.state, 'TASK_STATE_INPUT_REQUIRED', 'a task waiting for input stays resumable')
  const abandoned = await stateOf(stubborn.id)
  t.equal(abandoned?.state, 'TASK_STATE_CANCELED', 'an executor that ignores its signal is abandoned, its task cancelled')
  t.same(abandoned?.message?.parts, [{ text: 'the server shut down before the agent finished' }])
  t.equal(handler.runningExecutions, 0)
  t.equal(fastify.a2a.bus.listenerCount(), 0)
})

t.test('nothing in progress: close() returns at once with an empty report', async t => {
  const server = await startServer({ shutdown: { completionGrace: 60_000, taskGrace: 60_000 } })
  await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  await server.close()
  t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 0, abandoned: 0, streamsEnded: 0, webSocketsClosed: 0 })
})

t.test('close() clears the timer that bounds executions: a closed app leaves none behind', async t => {
  // The timer a call arms (lib/handler/deadlines.ts), told from Fastify's by its timeout.
  const executorTimeout = 987_654
  const live = liveTimeouts(t, timeout => timeout._idleTimeout === executorTimeout)
  const server = await startServer({ executorTimeout })
  await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  await result(server.endpoint, 'SendMessage', { message: userMessage('y') })
  t.equal(live.size, 1, 'one timer, kept armed by the calls though each one is over')
  await server.close()
  await eventually(() => live.size === 0)
  t.equal(live.size, 0, 'cleared by close()')
})

t.test('a held task with an SSE stream no longer keeps close() waiting past the grace periods', async t => {
  const server = await startServer({ shutdown: { completionGrace: 0, taskGrace: 1000 } })
  const open = await openSse(`${server.origin}/message:stream`, 'POST', { message: userMessage('hold') }, 2)
  t.equal(open.response.headers['content-type'], 'text/event-stream')
  await server.close()
  await open.ended
  t.equal(open.events.at(-1)?.data.statusUpdate?.status.state, 'TASK_STATE_CANCELED')
  t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 1, abandoned: 0, streamsEnded: 0, webSocketsClosed: 0 })
})

t.test('shutdown calls the executor\'s cancel hook for every execution it cancels, as CancelTask does', async t => {
  const cancelled: Array<{ taskId: string, state: string | undefined, aborted: boolean }> = []
  const executor: AgentExecutor = {
    async execute (_context, events) {
      await events.working()
      await new Promise(() => {})
    },
    async cancel (context, events) {
      cancelled.push({ taskId: context.taskId, state: context.task?.status.state, aborted: context.signal.aborted })
      await events.canceled('stopped by the cancel hook')
    }
  }
  const server = await startServer({ executor, shutdown: { completionGrace: 0, taskGrace: 1000 } })
  const open = await openSse(`${server.origin}/message:stream`, 'POST', { message: userMessage('anything') }, 2)
  const taskId: string = open.events[0]?.data.task.id
  await server.close()
  await open.ended
  t.same(cancelled, [{ taskId, state: 'TASK_STATE_WORKING', aborted: true }], 'the hook saw the task as stored, with the signal already aborted')
  const last = open.events.at(-1)?.data.statusUpdate?.status
  t.equal(last?.state, 'TASK_STATE_CANCELED')
  t.same(last?.message?.parts, [{ text: 'stopped by the cancel hook' }], 'the terminal event is the hook\'s')
  t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 0, abandoned: 1, streamsEnded: 0, webSocketsClosed: 0 }, 'execute() never returned: abandoned after taskGrace')
})

t.test('shutdown options: websocket.closeGrace is the older name of completionGrace', async t => {
  await t.rejects(startServer({ shutdown: { taskGrace: -1 } }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option shutdown.taskGrace: must be an integer >= 0' })
  await t.rejects(startServer({ shutdown: null as never }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option shutdown: must be an object' })
  await t.rejects(startServer({ shutdown: { completionGrace: 1.5 } }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option shutdown.completionGrace: must be an integer >= 0' })
  await t.rejects(startServer({ shutdown: { taskGrace: 2 ** 31 } }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option shutdown.taskGrace: must be at most 2147483647 ms' })
  await t.rejects(startServer({ shutdown: { completionGrace: 100 }, websocket: { closeGrace: 200 } }), /websocket\.closeGrace: conflicts with shutdown\.completionGrace/)
  const aliased = await startServer({ shutdown: { completionGrace: 100 }, websocket: { closeGrace: 100 } })
  await aliased.close()
  t.pass('the same value under both names is accepted')
})

t.test('the conformance agent drains on SIGTERM and exits 0, reporting on stderr', async t => {
  const process = await startAgentProcess()
  t.teardown(() => { process.child.kill('SIGKILL') })
  let stderr = ''
  process.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const held = await openSse(process.origin, 'POST', { jsonrpc: '2.0', id: 'held', method: 'SendStreamingMessage', params: { message: userMessage('hold') } }, 2)
  const ws = await connect(wsUrl(process.origin))
  const wsFrames: any[] = []
  ws.socket.on('message', (data) => wsFrames.push(JSON.parse(data.toString())))
  ws.send({ jsonrpc: '2.0', id: 'ws', method: 'SendStreamingMessage', params: { message: userMessage('hold') } })
  await eventually(() => wsFrames.length === 2)
  await result(process.origin, 'SendMessage', { message: userMessage('input') })
  process.child.kill('SIGTERM')
  t.same(await process.exit, { code: 0, signal: null }, 'the graceful path, not the fallback')
  await held.ended
  t.equal(held.events.at(-1)?.data.result.statusUpdate?.status.state, 'TASK_STATE_CANCELED')
  t.equal((await ws.closed).code, 1001)
  t.same(wsFrames.map(f => f.result.statusUpdate?.status.state ?? f.result.status ?? 'task'), ['task', 'TASK_STATE_WORKING', 'TASK_STATE_CANCELED', 'stream_complete'])
  t.match(stderr, /^shutdown \{"drained":0,"cancelled":2,"abandoned":0,"streamsEnded":0,"webSocketsClosed":1\}$/m)
})

t.test('an execution stopped by shutdown before it made a task: its call is answered Unavailable, whether it returns, throws or ignores its signal; no task is made', async t => {
  let emitLate!: () => void
  const late = new Promise<void>(resolve => { emitLate = resolve })
  const executor: AgentExecutor = {
    async execute (context, events) {
      const text = context.message.parts[0]?.text
      if (text === 'deaf') {
        // Ignores its signal, and emits only once the server has long given up on it.
        await late
        await events.working()
        await events.completed()
        return
      }
      await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      if (text === 'throws') throw new Error('aborted')
    }
  }
  const server = await startServer({ executor, shutdown: { completionGrace: 0, taskGrace: 200 } })
  const { handler, taskStore } = server.fastify.a2a
  const answers = ['returns', 'throws', 'deaf'].map(text => post(server.endpoint, { jsonrpc: '2.0', id: text, method: 'SendMessage', params: { message: userMessage(text) } }))
  const streamed = restStream(server.origin, 'POST', '/message:stream', { body: { message: userMessage('returns') } })
  await eventually(() => handler.runningExecutions === 4)
  await server.close()
  t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 3, abandoned: 1, streamsEnded: 0, webSocketsClosed: 0 })
  for (const [index, id] of ['returns', 'throws', 'deaf'].entries()) {
    t.same((await answers[index])?.body, { jsonrpc: '2.0', id, error: unavailable }, id)
  }
  const refused = await streamed
  t.equal(refused.status, 503, 'the stream that had no first event is refused')
  t.same(refused.body.error.status, 'UNAVAILABLE')
  emitLate()
  await eventually(() => handler.ignoredEvents === 2)
  t.equal((await taskStore.list({ pageSize: 100 }, { tenant: '' })).tasks.length, 0, 'no task was made, not even by the abandoned executor afterwards')
})

t.test('a SendMessage whose inline push config is still being checked when the executions are cancelled starts none: answered Unavailable within the grace periods', async t => {
  let lookingUp!: () => void
  const lookup = new Promise<void>(resolve => { lookingUp = resolve })
  let answerLookup!: () => void
  const answered = new Promise<void>(resolve => { answerLookup = resolve })
  let started = 0
  const completionGrace = 100
  const taskGrace = 100
  const server = await startServer({
    shutdown: { completionGrace, taskGrace },
    // Bounds this test should an executor start after all (it waits for its signal).
    executorTimeout: 1000,
    // The lookup of the webhook's host (up to 5 s at creation) answers only when the test says.
    push: {
      resolve: async () => {
        lookingUp()
        await answered
        throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' })
      }
    },
    executor: {
      async execute (context, events) {
        started++
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      }
    }
  })
  const { taskStore } = server.fastify.a2a
  const sent = post(server.endpoint, {
    jsonrpc: '2.0', id: 'checking', method: 'SendMessage', params: { message: userMessage('x'), configuration: { taskPushNotificationConfig: { url: 'http://hooks.invalid/x' } } }
  })
  await lookup
  const closing = server.close()
  const closedInTime = await Promise.race([
    closing.then(() => true),
    new Promise<boolean>(resolve => setTimeout(() => resolve(false), completionGrace + 2 * taskGrace + 3000))
  ])
  answerLookup()
  const { body } = await sent
  // Had close() not ended, the connections it waits for go: the test ends either way.
  if (!closedInTime) server.fastify.server.closeAllConnections()
  await closing
  t.ok(closedInTime, 'close() ends within completionGrace + 2 × taskGrace (and some slack), though the lookup has not answered')
  t.same(body, { jsonrpc: '2.0', id: 'checking', error: unavailable }, 'the call is refused as new ones are')
  t.equal(started, 0, 'no executor started, not even once the lookup answered')
  t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 0, abandoned: 0, streamsEnded: 0, webSocketsClosed: 0 })
  t.equal((await taskStore.list({ pageSize: 100 }, { tenant: '' })).tasks.length, 0, 'no task was made')
})

t.test('a call answered after the grace periods (a hung store) does not hold close() for its keep-alive time', async t => {
  let answerRead!: () => void
  const readAnswered = new Promise<void>(resolve => { answerRead = resolve })
  let reading!: () => void
  const read = new Promise<void>(resolve => { reading = resolve })
  class HungStore extends MemoryTaskStore {
    override async get (...args: Parameters<MemoryTaskStore['get']>) {
      if (args[0] === 'hung') {
        reading()
        await readAnswered
      }
      return await super.get(...args)
    }
  }
  const completionGrace = 50
  const taskGrace = 50
  const server = await startServer({ taskStore: new HungStore(), shutdown: { completionGrace, taskGrace } })
  const keepAlive = new http.Agent({ keepAlive: true })
  t.teardown(() => keepAlive.destroy())
  const answered = new Promise<any>((resolve, reject) => {
    const request = http.request(server.endpoint, { agent: keepAlive, method: 'POST', headers: { 'content-type': 'application/json', ...V1 } }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { text += chunk })
      response.on('end', () => resolve(JSON.parse(text)))
    })
    request.on('error', reject)
    request.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'hung' } }))
  })
  await read
  const closing = server.close()
  // Past both grace periods the shutdown is over and the server closing; then the store answers.
  setTimeout(answerRead, completionGrace + 2 * taskGrace + 200)
  t.equal((await answered).error.code, -32001, 'the late answer is written')
  const closedInTime = await Promise.race([
    closing.then(() => true),
    new Promise<boolean>(resolve => setTimeout(() => resolve(false), 5000))
  ])
  if (!closedInTime) server.fastify.server.closeAllConnections()
  await closing
  t.ok(closedInTime, 'close() ends once the answer is written: the connection it left idle is ended, not kept for its keep-alive time (72 s)')
})

for (const fault of ['hangs', 'fails'] as const) {
  t.test(`an abandoned execution whose CANCELED write ${fault} (a store that ${fault === 'hangs' ? 'stopped answering' : 'is out of reach'}): close() ends within completionGrace + 2 × taskGrace, its call answered Unavailable`, async t => {
    let broken = false
    const hung: Array<() => void> = []
    class BrokenWrites extends MemoryTaskStore {
      override async update (...args: Parameters<MemoryTaskStore['update']>) {
        if (broken && fault === 'fails') throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
        if (broken) await new Promise<void>(resolve => hung.push(resolve))
        return await super.update(...args)
      }
    }
    const taskStore = new BrokenWrites()
    t.teardown(() => { broken = false; for (const release of hung) release() })
    const completionGrace = 100
    const taskGrace = 200
    const server = await startServer({ executor: agent, taskStore, shutdown: { completionGrace, taskGrace } })
    const { handler } = server.fastify.a2a
    // A blocking call: only the task's end, or shutdown's refusal, answers it.
    const answer = post(server.endpoint, { jsonrpc: '2.0', id: 'stubborn', method: 'SendMessage', params: { message: userMessage('stubborn') } })
    let task: any
    await eventually(async () => { [task] = (await taskStore.list({ status: 'TASK_STATE_WORKING', pageSize: 1 }, { tenant: '' })).tasks; return task !== undefined })
    broken = true
    const started = Date.now()
    const closing = server.close()
    const closedInTime = await Promise.race([
      closing.then(() => true),
      new Promise<boolean>(resolve => setTimeout(() => resolve(false), completionGrace + 2 * taskGrace + 1500))
    ])
    if (!closedInTime) {
      // The old shutdown waits for the write, or the call, for ever: let them through, so that the test ends.
      broken = false
      for (const release of hung) release()
      server.fastify.server.closeAllConnections()
      await closing.catch(() => {})
    }
    t.ok(closedInTime, `close() ended within completionGrace + 2 × taskGrace and some slack (${Date.now() - started} ms)`)
    t.same((await answer.catch(() => undefined))?.body, { jsonrpc: '2.0', id: 'stubborn', error: unavailable }, 'the call is answered as shutdown refuses one')
    t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 0, abandoned: 1, streamsEnded: 0, webSocketsClosed: 0 })
    t.equal(handler.runningExecutions, 0)
    t.equal((await taskStore.get(task.id, { tenant: '' }))?.status.state, 'TASK_STATE_WORKING', 'the task is left as stored')
  })
}

t.test('a turn whose inline push config was checked leaves nothing behind for shutdown to stop: 1,000 such turns hold no promise', async t => {
  const receiver = await startReceiver()
  const server = await startServer({ push: { allow: ['127.0.0.1'], retryDelay: 1 } })
  t.teardown(async () => {
    await server.close()
    await receiver.close()
  })
  const sender = server.fastify.a2a.push as PushSender
  const turns = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const reply = await server.fastify.inject({
        method: 'POST',
        url: '/',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        payload: { jsonrpc: '2.0', id: i, method: 'SendMessage', params: { message: userMessage('x'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/hook` } } } }
      })
      if (reply.json().result?.task?.status.state !== 'TASK_STATE_COMPLETED') throw new Error(`turn ${i}: ${reply.body}`)
    }
    await sender.idle()
  }
  await turns(100)
  const before = heapObjects(Promise)
  await turns(1000)
  const after = heapObjects(Promise)
  t.ok(after - before < 100, `promises held after 1,000 more turns: ${after - before}`)
})
