// Executors that misbehave (issue 9 §6): a synchronous throw, a rejection after the task
// exists, one that never resolves (executorTimeout), events after the terminal state
// (ignored and counted), and invalid events (refused with InvalidAgentResponse, task
// FAILED). test/executor.test.ts holds the contract cases these build on.
import t, { type Test } from 'tap'
import { MemoryTaskStore, type AgentExecutor, type ExecutionEvents, type Scope, type TaskChange } from '../lib/index.js'
import { call, eventually, result, startServer, stream, userMessage } from './helpers/server.js'

async function serve (t: Test, executor: AgentExecutor, extra = {}) {
  const server = await startServer({ executor, ...extra })
  t.teardown(() => server.close())
  return server
}

t.test('a synchronous throw before any task: the task is created FAILED and the server goes on', async t => {
  const server = await serve(t, { execute () { throw new Error('sync boom') } })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  t.equal(task.status.state, 'TASK_STATE_FAILED')
  t.same(task.status.message.parts, [{ text: 'the agent failed' }], 'the cause is logged, not shown')
  t.equal(server.fastify.a2a.handler.runningExecutions, 0)
  t.equal((await call(server.endpoint, 'GetTask', { id: 'nope' })).error.code, -32001, 'the next call is served')
})

t.test('a synchronous throw after the task exists: FAILED with a status message', async t => {
  let events: ExecutionEvents | undefined
  const server = await serve(t, {
    execute (_context, given) {
      events = given
      void given.working()
      throw new Error('sync boom')
    }
  })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  t.ok(events)
  t.equal(task.status.state, 'TASK_STATE_FAILED')
  t.same(task.status.message.parts, [{ text: 'the agent failed' }])
})

t.test('a rejection after working: FAILED, and the stream ends with the FAILED status', async t => {
  const server = await serve(t, {
    async execute (_context, events) {
      await events.working()
      throw new Error('async boom')
    }
  })
  const streamed = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage('x') })
  const states = streamed.events.map(event => event.data.result.statusUpdate?.status.state ?? 'task')
  t.same(states, ['task', 'TASK_STATE_WORKING', 'TASK_STATE_FAILED'])
  t.same(streamed.events[2]?.data.result.statusUpdate.status.message.parts, [{ text: 'the agent failed' }])
})

t.test('executorTimeout: an executor that never resolves is aborted and its task FAILED', async t => {
  let signal: AbortSignal | undefined
  let late: ExecutionEvents | undefined
  const server = await serve(t, {
    async execute (context, events) {
      signal = context.signal
      late = events
      await events.working()
      await new Promise(() => {})
    }
  }, { executorTimeout: 100 })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  t.equal(task.status.state, 'TASK_STATE_FAILED')
  t.same(task.status.message.parts, [{ text: 'the agent did not finish within 100 ms' }])
  t.equal(signal?.aborted, true, 'the executor was told to stop')
  t.equal(server.fastify.a2a.handler.runningExecutions, 0, 'the execution is no longer waited for')
  await late?.completed()
  t.equal((await result(server.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_FAILED', 'what it writes afterwards is ignored')
  t.equal(server.fastify.a2a.handler.ignoredEvents, 1)
})

t.test('executorTimeout: one that finishes in time is not touched; the option is checked', async t => {
  const server = await serve(t, { async execute (_context, events) { await events.completed() } }, { executorTimeout: 60_000 })
  t.equal((await result(server.endpoint, 'SendMessage', { message: userMessage('x') })).task.status.state, 'TASK_STATE_COMPLETED')
  for (const bad of [0, -1, 1.5, '100', 2 ** 31]) {
    const why = bad === 2 ** 31 ? 'must be at most 2147483647 ms' : 'must be an integer >= 1'
    await t.rejects(startServer({ executorTimeout: bad as number }), { code: 'A2A_ERR_INVALID_OPTION', message: `Invalid option executorTimeout: ${why}` }, `executorTimeout ${String(bad)} is refused`)
  }
})

t.test('events after the terminal state are ignored, counted and logged, not thrown', async t => {
  const warnings: any[] = []
  let outcome: string | undefined
  const server = await serve(t, {
    async execute (_context, events) {
      await events.completed()
      await events.failed('too late')
      await events.artifact({ artifactId: 'late', parts: [{ text: 'late' }] })
      await events.message('late message')
      outcome = 'returned normally'
    }
  })
  const before = server.fastify.a2a.handler.ignoredEvents
  const logger = server.fastify.log
  const warn = logger.warn.bind(logger)
  logger.warn = ((object: unknown, message?: string) => { warnings.push({ object, message }); warn(object as object, message as string) }) as typeof logger.warn
  t.teardown(() => { logger.warn = warn })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  await eventually(() => outcome !== undefined)
  t.equal(outcome, 'returned normally')
  t.equal(server.fastify.a2a.handler.ignoredEvents - before, 3)
  t.same(warnings.map(w => [w.message, w.object.event, w.object.state, w.object.taskId]), [
    ['executor event after the task ended: ignored', 'status', 'TASK_STATE_COMPLETED', task.id],
    ['executor event after the task ended: ignored', 'artifact', 'TASK_STATE_COMPLETED', task.id],
    ['executor event after the task ended: ignored', 'message', 'TASK_STATE_COMPLETED', task.id]
  ])
  const stored = await result(server.endpoint, 'GetTask', { id: task.id })
  t.equal(stored.status.state, 'TASK_STATE_COMPLETED')
  t.notOk('artifacts' in stored)
  t.equal(stored.history.length, 1, 'the late message was not stored')
})

t.test('an invalid event is refused with InvalidAgentResponse and the task ends FAILED', async t => {
  const cases: Array<[string, (events: ExecutionEvents) => Promise<void>, RegExp]> = [
    ['artifact', events => events.artifact({ artifactId: 'a', parts: [] }), /artifact\.parts must not have fewer than 1 items/],
    ['artifact', events => events.artifact({ artifactId: 'a', parts: [{ raw: 'AAAAA' }] }), /artifact\.parts\[0\]\.raw must be base64/],
    // The SQL stores key artifacts on their id: an id no key may be is refused on every store alike.
    ['artifact', events => events.artifact({ artifactId: 'a\u0000b', parts: [{ text: 'x' }] }), /artifact\.artifactId must hold no NUL character and no lone surrogate/],
    ['artifact', events => events.artifact({ artifactId: 'x\ud800', parts: [{ text: 'x' }] }), /artifact\.artifactId must hold no NUL character/],
    ['artifact', events => events.artifact({ artifactId: 'a'.repeat(257), parts: [{ text: 'x' }] }), /artifact\.artifactId must not have more than 256 characters/],
    ['status', events => events.working({ parts: [{ text: 1 as unknown as string }] }), /^Invalid agent response: /],
    ['status', events => events.status('TASK_STATE_BOGUS' as 'TASK_STATE_WORKING'), /state "TASK_STATE_BOGUS" is not a task state/],
    ['message', events => events.message({ parts: [] }), /parts must not have fewer than 1 items/]
  ]
  for (const [kind, emit, reason] of cases) {
    let refusal: any
    let after: string | undefined
    const server = await startServer({
      executor: {
        async execute (_context, events) {
          await events.working()
          try {
            await emit(events)
          } catch (error) {
            refusal = error
          }
          await events.completed()
          after = 'done'
        }
      }
    })
    const streamed = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage('x') })
    await eventually(() => after !== undefined)
    t.equal(refusal?.code, 'A2A_ERR_INVALID_AGENT_RESPONSE', `${kind}: refused to the executor`)
    t.match(refusal?.message, reason)
    const last = streamed.events.at(-1)?.data.result.statusUpdate
    t.equal(last?.status.state, 'TASK_STATE_FAILED', `${kind}: the stream ends FAILED`)
    t.same(last?.status.message.parts, [{ text: `the agent sent an invalid ${kind} event` }])
    t.equal(server.fastify.a2a.handler.ignoredEvents, 1, `${kind}: the completed() after it was ignored`)
    await server.close()
  }
})

t.test('an invalid direct reply (no task yet): the call fails -32006, no task is created', async t => {
  const server = await serve(t, { async execute (_context, events) { await events.message({ parts: [] }) } })
  const { error } = await call(server.endpoint, 'SendMessage', { message: userMessage('x') })
  t.same(error, {
    code: -32006,
    message: 'Invalid agent response: message.parts must not have fewer than 1 items',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_AGENT_RESPONSE', domain: 'a2a-protocol.org' }]
  })
  t.equal((await result(server.endpoint, 'ListTasks', {})).totalSize, 0)
})

t.test('a service out of reach before any task (the store\'s first write, or the agent\'s own): Unavailable, no task, and the same message can be sent again', async t => {
  const outage = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
  let blips = 1
  class BlippingStore extends MemoryTaskStore {
    override async create (...args: Parameters<MemoryTaskStore['create']>) {
      if (blips-- > 0) throw outage()
      return await super.create(...args)
    }
  }
  const server = await serve(t, {
    async execute (context, events) {
      if (context.message.parts[0]?.text === 'own outage') throw outage()
      await events.working()
      await events.completed()
    }
  }, { taskStore: new BlippingStore() })
  const unavailable = {
    code: -32603,
    message: 'Service unavailable: a service the agent needs cannot be reached',
    data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
  }
  const message = userMessage('x')
  t.same((await call(server.endpoint, 'SendMessage', { message })).error, unavailable, 'the store\'s first write failed')
  t.equal((await result(server.endpoint, 'ListTasks', {})).totalSize, 0, 'no task was made FAILED')
  t.equal((await result(server.endpoint, 'SendMessage', { message })).task.status.state, 'TASK_STATE_COMPLETED', 'the same message, sent again')
  t.same((await call(server.endpoint, 'SendMessage', { message: userMessage('own outage') })).error, unavailable, 'the agent\'s own service out of reach')
  t.equal((await result(server.endpoint, 'ListTasks', {})).totalSize, 1)
})

t.test('executorTimeout before any task: the task is made FAILED, and what the executor emits later is ignored', async t => {
  let late: ExecutionEvents | undefined
  let release!: () => void
  const released = new Promise<void>(resolve => { release = resolve })
  const server = await serve(t, {
    async execute (_context, events) {
      late = events
      await released
      await events.working()
      await events.artifact({ artifactId: 'late', parts: [{ text: 'late work' }] })
      await events.completed()
    }
  }, { executorTimeout: 100 })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  t.equal(task.status.state, 'TASK_STATE_FAILED', 'not -32006: the executor did not return')
  t.same(task.status.message.parts, [{ text: 'the agent did not finish within 100 ms' }])
  t.ok(late !== undefined)
  release()
  await eventually(() => server.fastify.a2a.handler.ignoredEvents === 3)
  const stored = await result(server.endpoint, 'GetTask', { id: task.id })
  t.equal(stored.status.state, 'TASK_STATE_FAILED')
  t.notOk('artifacts' in stored, 'the late artifact was not stored')
  t.equal((await result(server.endpoint, 'ListTasks', {})).tasks.length, 1, 'no second task')
})

t.test('events of an execute() that has returned are ignored: a later turn running the task is not ended by them', async t => {
  const warnings: any[] = []
  let first: ExecutionEvents | undefined
  let secondTurn!: () => void
  const secondRunning = new Promise<void>(resolve => { secondTurn = resolve })
  let finishSecond!: () => void
  const secondMayFinish = new Promise<void>(resolve => { finishSecond = resolve })
  const server = await serve(t, {
    async execute (context, events) {
      if (context.task === undefined) {
        first = events
        await events.inputRequired('what is your name?')
        return
      }
      await events.working()
      secondTurn()
      await secondMayFinish
      await events.artifact({ artifactId: 'answer', parts: [{ text: 'hello' }] })
      await events.completed()
    }
  })
  const logger = server.fastify.log
  const warn = logger.warn.bind(logger)
  logger.warn = ((object: unknown, message?: string) => { warnings.push({ object, message }); warn(object as object, message as string) }) as typeof logger.warn
  t.teardown(() => { logger.warn = warn })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x') })
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const answered = result(server.endpoint, 'SendMessage', { message: userMessage('Ada', { taskId: task.id }) })
  await secondRunning
  await first?.completed('from the first turn, too late')
  await first?.artifact({ artifactId: 'stale', parts: [{ text: 'stale' }] })
  finishSecond()
  const done = (await answered).task
  t.equal(done.status.state, 'TASK_STATE_COMPLETED')
  t.notOk('message' in done.status, 'the second turn ended the task, not the first one\'s late event')
  t.same(done.artifacts, [{ artifactId: 'answer', parts: [{ text: 'hello' }] }])
  t.same(warnings.filter(w => w.message?.startsWith('executor event')).map(w => [w.message, w.object.event, w.object.taskId]), [
    ['executor event after its execution returned: ignored', 'status', task.id],
    ['executor event after its execution returned: ignored', 'artifact', task.id]
  ])
})

t.test('a later message whose change fails while the task\'s executor returns leaves the task FAILED, not WORKING with no executor', async t => {
  const store = new (class extends MemoryTaskStore {
    override async update (id: string, change: TaskChange, scope: Scope) {
      if (change.kind === 'history' && change.message.parts[0]?.text === 'poison') {
        await new Promise(resolve => setTimeout(resolve, 100))
        throw new Error('the store is down')
      }
      return await super.update(id, change, scope)
    }
  })()
  let returnFirst!: () => void
  const firstMayReturn = new Promise<void>(resolve => { returnFirst = resolve })
  const server = await serve(t, {
    async execute (_context, events) {
      await events.working()
      await firstMayReturn
    }
  }, { taskStore: store })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('first'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const poisoned = call(server.endpoint, 'SendMessage', { message: userMessage('poison', { taskId: task.id }) })
  await eventually(() => server.fastify.a2a.handler.runningExecutions === 2)
  returnFirst()
  t.same((await poisoned).error, { code: -32603, message: 'Internal error' })
  await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).status.state !== 'TASK_STATE_WORKING')
  const ended = await result(server.endpoint, 'GetTask', { id: task.id })
  t.equal(ended.status.state, 'TASK_STATE_FAILED')
  t.same(ended.status.message.parts, [{ text: 'the agent stopped without a final state' }])
  t.equal(server.fastify.a2a.handler.runningExecutions, 0)
})
