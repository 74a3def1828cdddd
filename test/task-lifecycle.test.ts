// The task state machine through the JSON-RPC binding (spec §10): creation, blocking
// and returnImmediately, interrupted states and resumption, terminal states, the
// taskId / contextId rules, historyLength, cancel and the executor's failures.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { isTerminal, openSqliteStores, type StreamResponse } from '../lib/index.js'
import { topicOf } from '../lib/bus/topic.js'
import { MemoryTaskStore } from '../lib/store/memory.js'
import { call, eventually, result, startServer, stream, userMessage } from './helpers/server.js'
import { startReceiver } from './helpers/webhook.js'

const server = await startServer()
t.teardown(() => server.close())
const url = server.endpoint
const send = (text: string, extra = {}, configuration?: object) =>
  call(url, 'SendMessage', configuration === undefined ? { message: userMessage(text, extra) } : { message: userMessage(text, extra), configuration })

/** A promise and what settles it: a step a test lets happen when it chooses. */
function gate (): { passed: Promise<void>, open: () => void } {
  let open!: () => void
  const passed = new Promise<void>(resolve => { open = resolve })
  return { passed, open }
}

/**
 * A memory store awaited as any other (a subclass has no immediate operations) whose next read
 * of a task can be held: it reads the task at once, as it is then, and answers once released.
 */
class HeldReadStore extends MemoryTaskStore {
  #held: { taskId: string, skip: number, read: () => void, released: Promise<void> } | undefined

  /** The next read of `taskId` (past `skip` others): `read` settles once it has read the task, `release()` lets it answer. */
  holdNextRead (taskId: string, skip = 0): { read: Promise<void>, release: () => void } {
    const read = gate()
    const release = gate()
    this.#held = { taskId, skip, read: read.open, released: release.passed }
    return { read: read.passed, release: release.open }
  }

  override async get (...args: Parameters<MemoryTaskStore['get']>) {
    const task = structuredClone(await super.get(...args))
    const held = this.#held
    if (held?.taskId === args[0] && held.skip-- === 0) {
      this.#held = undefined
      held.read()
      await held.released
    }
    return task
  }
}

/** The terminal states published on the task's topic, from now on. */
function terminalEvents (t: Test, bus: { subscribe (topic: string, listener: (event: StreamResponse) => void): () => void }, taskId: string): string[] {
  const states: string[] = []
  t.teardown(bus.subscribe(topicOf('', taskId), (event) => {
    const state = event.statusUpdate?.status.state
    if (state !== undefined && isTerminal(state)) states.push(state)
  }))
  return states
}

/**
 * A WORKING task, then `act` on it, whose read of the task is held until the task has completed
 * and its run is gone: `act`'s answer, with the terminal events the bus carried meanwhile.
 */
async function overtakenRead (t: Test, act: (endpoint: string, taskId: string) => Promise<any>) {
  const taskStore = new HeldReadStore()
  const complete = gate()
  const server = await startServer({
    taskStore,
    executor: {
      async execute (_context, events) {
        await events.working()
        await complete.passed
        await events.completed()
      }
    }
  })
  t.teardown(() => server.close())
  const { handler, bus } = server.fastify.a2a
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('first'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const ends = terminalEvents(t, bus, task.id)
  const { read, release } = taskStore.holdNextRead(task.id)
  const answering = act(server.endpoint, task.id)
  await read
  // The call read the task WORKING; now it completes, and its run goes.
  complete.open()
  await eventually(() => handler.activeTasks === 0)
  release()
  return { server, handler, task, ends, answer: await answering }
}

t.test('echo: blocking by default, returns the completed task with its artifact and history', async t => {
  const { result: { task } } = await send('hello there')
  t.match(task.id, /^[0-9a-f-]{36}$/, 'a server-generated id')
  t.match(task.contextId, /^[0-9a-f-]{36}$/, 'a generated context id')
  t.equal(task.status.state, 'TASK_STATE_COMPLETED')
  t.match(task.status.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.same(task.artifacts, [{ artifactId: 'echo', parts: [{ text: 'hello there' }] }])
  t.equal(task.history.length, 1)
  t.same(task.history[0].parts, [{ text: 'hello there' }])
  t.equal(task.history[0].taskId, task.id)
  t.equal(task.history[0].contextId, task.contextId)
  t.notOk('kind' in task)
})

t.test('the history keeps every key of the user message, with the task\'s ids', async t => {
  const message = userMessage('keys', { metadata: { from: 'test' }, referenceTaskIds: ['earlier'], extensions: ['https://example.com/ext'] })
  const { result: { task } } = await call(url, 'SendMessage', { message })
  const { result: stored } = await call(url, 'GetTask', { id: task.id })
  for (const history of [task.history, stored.history]) {
    t.strictSame(history, [{ ...message, taskId: task.id, contextId: task.contextId }])
  }
})

t.test('a command is the whole text (shared/sut-agent.md): any other text is echoed', async t => {
  for (const text of ['fail now', 'reject me', 'input please', 'params please', 'hold on', 'throw it', 'message', 'stream', 'stream abc', 'stream -1', 'sleep', 'sleep 5ms', 'Fail', ' hold']) {
    const { result: { task } } = await send(text)
    t.equal(task.status.state, 'TASK_STATE_COMPLETED', text)
    t.same(task.artifacts, [{ artifactId: 'echo', parts: [{ text }] }], text)
  }
  const { result: { message } } = await send('message two  spaces ')
  t.same(message.parts, [{ text: 'two  spaces ' }], 'message takes everything after its space')
  const { result: { task: streamed } } = await send('stream 2')
  t.same(streamed.artifacts, [{ artifactId: 'stream', parts: [{ text: 'chunk 1' }, { text: 'chunk 2' }] }])
  t.same((await send('sleep 1')).result.task.artifacts, [{ artifactId: 'slept', parts: [{ text: 'slept 1' }] }])
})

t.test('a client contextId starts a new task in that context', async t => {
  const { result: { task } } = await send('x', { contextId: 'my-context' })
  t.equal(task.contextId, 'my-context')
})

t.test('message <text>: a direct Message, no task', async t => {
  const { result } = await send('message hi there')
  t.same(Object.keys(result), ['message'])
  t.equal(result.message.role, 'ROLE_AGENT')
  t.same(result.message.parts, [{ text: 'hi there' }])
  t.type(result.message.messageId, 'string')
  t.type(result.message.contextId, 'string')
  t.notOk('taskId' in result.message)
})

t.test('fail, reject and throw end the task FAILED / REJECTED / FAILED; the server keeps serving', async t => {
  const failed = (await send('fail')).result.task
  t.equal(failed.status.state, 'TASK_STATE_FAILED')
  t.same(failed.status.message.parts, [{ text: 'failed on purpose' }])
  t.equal(failed.status.message.role, 'ROLE_AGENT')
  t.equal((await send('reject')).result.task.status.state, 'TASK_STATE_REJECTED')
  const thrown = (await send('throw')).result.task
  t.equal(thrown.status.state, 'TASK_STATE_FAILED')
  t.notMatch(JSON.stringify(thrown), /thrown on purpose/, 'the exception text is not shown to the client')
  t.equal((await send('after the throw')).result.task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('returnImmediately returns the task at once; GetTask then sees it finish', async t => {
  const { result: { task } } = await send('sleep 150', {}, { returnImmediately: true })
  t.ok(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'].includes(task.status.state), task.status.state)
  await eventually(async () => (await result(url, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_COMPLETED')
  const done = await result(url, 'GetTask', { id: task.id })
  t.same(done.artifacts, [{ artifactId: 'slept', parts: [{ text: 'slept 150' }] }])
})

t.test('input: INPUT_REQUIRED with a status message, resumed by the next message on the task', async t => {
  const first = (await send('input')).result.task
  t.equal(first.status.state, 'TASK_STATE_INPUT_REQUIRED')
  t.same(first.status.message.parts, [{ text: 'need input' }])
  const resumed = (await send('the answer', { taskId: first.id })).result.task
  t.equal(resumed.id, first.id)
  t.equal(resumed.contextId, first.contextId, 'contextId inferred from the task')
  t.equal(resumed.status.state, 'TASK_STATE_COMPLETED')
  t.same(resumed.artifacts, [{ artifactId: 'echo', parts: [{ text: 'the answer' }] }])
  t.same(resumed.history.map((m: any) => [m.role, m.parts[0].text]), [
    ['ROLE_USER', 'input'], ['ROLE_AGENT', 'need input'], ['ROLE_USER', 'the answer']
  ])
})

t.test('an unknown taskId → -32001 TaskNotFound', async t => {
  const { error } = await send('x', { taskId: 'no-such-task' })
  t.same(error, {
    code: -32001,
    message: 'Task not found: no-such-task',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'no-such-task' } }]
  })
})

t.test('a message to a terminal task → -32004 UnsupportedOperation', async t => {
  const done = (await send('x')).result.task
  const { error } = await send('again', { taskId: done.id })
  t.equal(error.code, -32004)
  t.same(error.data, [{
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org', metadata: { taskId: done.id, state: 'TASK_STATE_COMPLETED' }
  }])
})

t.test('a taskId / contextId mismatch → -32602', async t => {
  const waiting = (await send('input')).result.task
  const { error } = await send('x', { taskId: waiting.id, contextId: 'another-context' })
  t.same(error, {
    code: -32602,
    message: `Invalid parameters: message.contextId does not match the context of task ${waiting.id}`,
    data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.contextId', description: `does not match the context of task ${waiting.id}` }] }]
  })
  t.equal((await result(url, 'GetTask', { id: waiting.id })).status.state, 'TASK_STATE_INPUT_REQUIRED', 'the task is untouched')
})

t.test('historyLength: absent = all, 0 = none (field left out), n = the n most recent', async t => {
  const first = (await send('input')).result.task
  const task = (await send('answer', { taskId: first.id })).result.task
  t.equal(task.history.length, 3)
  const none = await result(url, 'GetTask', { id: task.id, historyLength: 0 })
  t.notOk('history' in none)
  const last = await result(url, 'GetTask', { id: task.id, historyLength: 1 })
  t.same(last.history.map((m: any) => m.parts[0].text), ['answer'])
  const many = await result(url, 'GetTask', { id: task.id, historyLength: 50 })
  t.equal(many.history.length, 3)
  const viaSend = (await send('x', {}, { historyLength: 0 })).result.task
  t.notOk('history' in viaSend, 'historyLength applies to the SendMessage result')
  t.equal((await call(url, 'GetTask', { id: task.id, historyLength: -1 })).error.code, -32602)
})

t.test('hold + CancelTask → CANCELED; the executor signal is aborted', async t => {
  const { result: { task } } = await send('hold', {}, { returnImmediately: true })
  await eventually(async () => (await result(url, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const canceled = await result(url, 'CancelTask', { id: task.id })
  t.equal(canceled.id, task.id)
  t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
  t.equal((await result(url, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
  await eventually(() => server.fastify.a2a.handler.activeTasks === 0)
})

t.test('cancel an interrupted task (no executor running) → CANCELED', async t => {
  const waiting = (await send('input')).result.task
  t.equal((await result(url, 'CancelTask', { id: waiting.id })).status.state, 'TASK_STATE_CANCELED')
})

t.test('cancel a terminal task → -32002 TaskNotCancelable, also the second time', async t => {
  const done = (await send('x')).result.task
  for (let i = 0; i < 2; i++) {
    const { error } = await call(url, 'CancelTask', { id: done.id })
    t.same(error, {
      code: -32002,
      message: `Task cannot be canceled: ${done.id}`,
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org', metadata: { taskId: done.id, state: 'TASK_STATE_COMPLETED' } }]
    })
  }
  t.equal((await call(url, 'CancelTask', { id: 'unknown' })).error.code, -32001)
})

t.test('a task its cancel hook completes instead → -32002 TaskNotCancelable, the task COMPLETED', async t => {
  const finishing = await startServer({
    executor: {
      async execute (context, events) {
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve))
      },
      async cancel (_context, events) {
        await events.completed()
      }
    }
  })
  t.teardown(() => finishing.close())
  const { result: { task } } = await call(finishing.endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(finishing.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const { error } = await call(finishing.endpoint, 'CancelTask', { id: task.id })
  t.same(error, {
    code: -32002,
    message: `Task cannot be canceled: ${task.id}`,
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org', metadata: { taskId: task.id, state: 'TASK_STATE_COMPLETED' } }]
  })
  t.equal((await result(finishing.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_COMPLETED')
})

t.test('a CancelTask whose read of its task is overtaken by the task\'s end: -32002, and the end is published once', async t => {
  const { handler, task, ends, answer: { error } } = await overtakenRead(t, (endpoint, id) => call(endpoint, 'CancelTask', { id }))
  t.same(error, {
    code: -32002,
    message: `Task cannot be canceled: ${task.id}`,
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org', metadata: { taskId: task.id, state: 'TASK_STATE_COMPLETED' } }]
  })
  t.same(ends, ['TASK_STATE_COMPLETED'], 'one terminal event, the executor\'s')
  t.equal(handler.ignoredEvents, 0, 'no end was taken as another process\'s')
  t.equal(handler.activeTasks, 0)
})

t.test('a message whose turn is cancelled while it is set up calls no executor: the task ends CANCELED', async t => {
  const taskStore = new HeldReadStore()
  const executed: string[] = []
  const cancelHook = gate()
  const server = await startServer({
    taskStore,
    executor: {
      async execute (context, events) {
        executed.push(context.message.parts[0]?.text as string)
        await events.inputRequired('more?')
      },
      async cancel () { cancelHook.open() }
    }
  })
  t.teardown(() => server.close())
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('first') })
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  // The second turn holds its read of the task in its change (the call's own comes first); the cancel aborts it meanwhile.
  const { read, release } = taskStore.holdNextRead(task.id, 1)
  const sending = result(server.endpoint, 'SendMessage', { message: userMessage('second', { taskId: task.id }) })
  await read
  const cancelling = result(server.endpoint, 'CancelTask', { id: task.id })
  await cancelHook.passed
  release()
  const [canceled] = await Promise.all([cancelling, sending])
  t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
  t.same(executed, ['first'], 'the cancelled turn called no executor')
  const stored = await result(server.endpoint, 'GetTask', { id: task.id })
  t.equal(stored.status.state, 'TASK_STATE_CANCELED')
  t.same(stored.history.filter((message: any) => message.role === 'ROLE_USER').map((message: any) => message.parts[0].text), ['first', 'second'], 'the message is in the history')
  await eventually(() => server.fastify.a2a.handler.activeTasks === 0)
})

t.test("the cancel hook's context carries the CancelTask request's metadata, over JSON-RPC and REST", async t => {
  const seen: unknown[] = []
  const recording = await startServer({
    executor: {
      async execute (context, events) {
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve))
      },
      async cancel (context) { seen.push(context.metadata) }
    }
  })
  t.teardown(() => recording.close())
  const start = async () => {
    const { result: { task } } = await call(recording.endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(recording.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    return task.id as string
  }
  const metadata = { reason: 'user-asked', n: 1, nested: { ok: true } }
  t.equal((await result(recording.endpoint, 'CancelTask', { id: await start(), metadata })).status.state, 'TASK_STATE_CANCELED')
  const rest = await fetch(`${recording.origin}/tasks/${await start()}:cancel`, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: JSON.stringify({ metadata: { via: 'rest' } }) })
  t.equal(rest.status, 200)
  t.equal((await result(recording.endpoint, 'CancelTask', { id: await start() })).status.state, 'TASK_STATE_CANCELED')
  t.same(seen, [metadata, { via: 'rest' }, undefined])
})

t.test('GetTask of an unknown id → -32001', async t => {
  t.equal((await call(url, 'GetTask', { id: 'nope' })).error.code, -32001)
})

t.test('a later message whose executor returns at once leaves the task to the execution still running it', async t => {
  let finishFirst = () => {}
  const overlapping = await startServer({
    executor: {
      async execute (context, events) {
        if (context.task !== undefined) return
        await events.working()
        await new Promise<void>(resolve => { finishFirst = resolve })
        await events.completed()
      }
    }
  })
  t.teardown(() => overlapping.close())
  const { result: { task } } = await call(overlapping.endpoint, 'SendMessage', { message: userMessage('first'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(overlapping.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const second = await result(overlapping.endpoint, 'SendMessage', { message: userMessage('second', { taskId: task.id }) })
  t.equal(second.task.status.state, 'TASK_STATE_WORKING', 'not FAILED: the first execution still runs the task')
  finishFirst()
  await eventually(async () => (await result(overlapping.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_COMPLETED')
  t.equal(overlapping.fastify.a2a.handler.activeTasks, 0)
})

t.test('a later message whose turn ends the task aborts the signal of the execution still running it', async t => {
  for (const withMessage of [false, true]) {
    const aborted: string[] = []
    const overlapping = await startServer({
      executor: {
        async execute (context, events) {
          const text = context.message.parts[0]?.text ?? ''
          context.signal.addEventListener('abort', () => aborted.push(text))
          if (context.task !== undefined) return withMessage ? events.completed('done') : events.completed()
          await events.working()
          await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
        }
      }
    })
    t.teardown(() => overlapping.close())
    const { result: { task } } = await call(overlapping.endpoint, 'SendMessage', { message: userMessage('first'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(overlapping.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    const second = await result(overlapping.endpoint, 'SendMessage', { message: userMessage('second', { taskId: task.id }) })
    t.equal(second.task.status.state, 'TASK_STATE_COMPLETED')
    await eventually(() => overlapping.fastify.a2a.handler.activeTasks === 0)
    t.same(aborted, ['first'], `the ending execution's own signal is left alone (a status ${withMessage ? 'with' : 'without'} a message)`)
    t.equal((await result(overlapping.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_COMPLETED', 'and the task stays as it ended')
  }
})

t.test('a message to a task that the store fails to record leaves nothing running behind', async t => {
  const taskStore = new MemoryTaskStore()
  const failing = await startServer({ taskStore })
  t.teardown(() => failing.close())
  const { result: { task } } = await call(failing.endpoint, 'SendMessage', { message: userMessage('input') })
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const update = taskStore.update.bind(taskStore)
  taskStore.update = async (id, change, scope) => {
    if (change.kind === 'history') throw new Error('store down')
    return await update(id, change, scope)
  }
  const refused = await call(failing.endpoint, 'SendMessage', { message: userMessage('answer', { taskId: task.id }) })
  t.equal(refused.error.code, -32603)
  t.equal(failing.fastify.a2a.handler.activeTasks, 0, 'its run is gone')
  t.equal(failing.fastify.a2a.handler.runningExecutions, 0)
})

t.test('a CancelTask that the store fails after its first read leaves nothing running behind, with and without a cancel hook', async t => {
  for (const hook of [false, true]) {
    // Reads go through `get` (a subclass's store has no immediate operations): after `reads`
    // more reads, every read fails until `reads` is set again.
    class FlakyStore extends MemoryTaskStore {
      reads = Infinity
      override async get (...args: Parameters<MemoryTaskStore['get']>) {
        if (this.reads-- <= 0) throw new Error('store down')
        return await super.get(...args)
      }
    }
    const taskStore = new FlakyStore()
    let hookRan = false
    const failing = await startServer({
      taskStore,
      executor: {
        async execute (_context, events) { await events.inputRequired('more?') },
        ...(hook ? { async cancel () { hookRan = true } } : {})
      }
    })
    t.teardown(() => failing.close())
    const { task } = await result(failing.endpoint, 'SendMessage', { message: userMessage('x') })
    t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
    // The first read finds the task; the next, once its executions are aborted, fails.
    taskStore.reads = 1
    const refused = await call(failing.endpoint, 'CancelTask', { id: task.id })
    t.same(refused.error, { code: -32603, message: 'Internal error' }, `hook ${hook}: the store's failure is an internal error`)
    t.equal(hookRan, hook)
    t.equal(failing.fastify.a2a.handler.activeTasks, 0, `hook ${hook}: its run is gone`)
    t.equal(failing.fastify.a2a.handler.runningExecutions, 0)
    taskStore.reads = Infinity
    t.equal((await result(failing.endpoint, 'CancelTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED', 'the store back, the task is canceled')
  }
})

t.test('a refused message whose task asked for input while the message was being checked leaves it waiting for input, with the memory store and with SQLite', async t => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sqlite = openSqliteStores({ path: ':memory:' })
  t.teardown(() => sqlite.close())
  for (const [name, stores] of [['memory', {}], ['SQLite', sqlite]] as const) {
    // The inline config's host is looked up between the message's read of its task and its turn.
    const lookup = gate()
    const answer = gate()
    const askForInput = gate()
    const resumed: string[] = []
    const server = await startServer({
      ...stores,
      push: {
        allow: ['127.0.0.1'],
        maxConfigsPerTask: 1,
        resolve: async () => {
          lookup.open()
          await answer.passed
          throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' })
        }
      },
      executor: {
        async execute (context, events) {
          if (context.task !== undefined) {
            resumed.push(context.message.parts[0]?.text as string)
            return await events.completed()
          }
          await events.working()
          await askForInput.passed
          await events.inputRequired('need input')
        }
      }
    })
    t.teardown(() => server.close())
    const { handler } = server.fastify.a2a
    const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('first'), configuration: { returnImmediately: true } })
    await result(server.endpoint, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'first', url: `${receiver.origin}/first` })
    const refused = call(server.endpoint, 'SendMessage', {
      message: userMessage('refused', { taskId: task.id }),
      configuration: { taskPushNotificationConfig: { id: 'second', url: 'http://hooks.invalid/second' } }
    })
    await lookup.passed
    // The message read the task running; now the first turn asks for input, and its run goes.
    askForInput.open()
    await eventually(() => handler.activeTasks === 0)
    answer.open()
    const { error } = await refused
    t.match(error, { code: -32602, message: /^Invalid parameters: taskId already has 1 push notification configs/ }, `${name}: refused, the task has its one config`)
    await eventually(() => handler.activeTasks === 0)
    const after = await result(server.endpoint, 'GetTask', { id: task.id })
    t.equal(after.status.state, 'TASK_STATE_INPUT_REQUIRED', `${name}: still waiting for input, not FAILED`)
    t.same(after.status.message.parts, [{ text: 'need input' }])
    t.same(after.history.map((message: any) => message.parts[0].text), ['first', 'need input'], `${name}: the refused message was not added`)
    t.same(resumed, [], `${name}: no execution ran it`)
    t.equal(handler.ignoredEvents, 0)
  }
})

t.test('a message whose read of its task is overtaken by the task\'s end: -32004, and the end is published once', async t => {
  const { server, handler, task, ends, answer: { error } } = await overtakenRead(t, (endpoint, taskId) => call(endpoint, 'SendMessage', { message: userMessage('late', { taskId }) }))
  t.match(error, { code: -32004, data: [{ reason: 'UNSUPPORTED_OPERATION', metadata: { taskId: task.id, state: 'TASK_STATE_COMPLETED' } }] })
  await eventually(() => handler.activeTasks === 0)
  t.same(ends, ['TASK_STATE_COMPLETED'], 'one terminal event, the executor\'s')
  t.equal(handler.ignoredEvents, 0, 'no end was taken as another process\'s')
  t.equal((await result(server.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_COMPLETED')
})

t.test('a snapshot of a live task keeps its artifacts as they were: later chunks grow neither its parts nor its metadata', async t => {
  let release = () => {}
  const gate = new Promise<void>(resolve => { release = resolve })
  const server = await startServer({
    executor: {
      async execute (_context, events) {
        await events.artifact({ artifactId: 'a', parts: [{ text: 'one' }], metadata: { k1: 1 } })
        await gate
        await events.artifact({ artifactId: 'a', parts: [{ text: 'two' }], metadata: { k2: 2 } }, { append: true })
        await events.completed()
      }
    }
  })
  t.teardown(() => server.close())
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
  const context = { binding: 'test', method: 'GetTask', serviceParams: {}, tenant: '', extensions: [] }
  const handler = server.fastify.a2a.handler
  await eventually(async () => (await handler.getTask({ id: task.id }, context)).artifacts !== undefined)
  const snapshot = await handler.getTask({ id: task.id }, context)
  release()
  await eventually(async () => (await handler.getTask({ id: task.id }, context)).status.state === 'TASK_STATE_COMPLETED')
  t.same(snapshot.artifacts, [{ artifactId: 'a', parts: [{ text: 'one' }], metadata: { k1: 1 } }])
  t.same((await handler.getTask({ id: task.id }, context)).artifacts, [{ artifactId: 'a', parts: [{ text: 'one' }, { text: 'two' }], metadata: { k1: 1, k2: 2 } }])
})

t.test('a resumed turn starts from the task holding the new message once, with the memory store and with SQLite', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'a2a-resume-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const sqlite = openSqliteStores({ path: join(dir, 'tasks.db') })
  t.teardown(() => sqlite.close())
  for (const [name, stores] of [['memory', {}], ['SQLite', sqlite]] as const) {
    const seenByExecutor: string[][] = []
    const server = await startServer({
      ...stores,
      executor: {
        async execute (context, events) {
          if (context.task === undefined) return await events.inputRequired('more?')
          seenByExecutor.push((context.task.history ?? []).map(message => message.parts[0]?.text as string))
          await events.completed()
        }
      }
    })
    t.teardown(() => server.close())
    const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('first') })
    const { events } = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage('second', { taskId: task.id }) })
    const first = events[0]?.data.result.task
    t.same(first.history.map((message: any) => message.parts[0].text), ['first', 'more?', 'second'], `${name}: the stream's first event`)
    t.same(seenByExecutor, [['first', 'more?', 'second']], `${name}: the executor's context.task`)
  }
})

t.test('a blocking SendMessage whose finished task the store has let go already: TaskNotFound, not an internal error', async t => {
  const gone = await startServer({ taskStore: new MemoryTaskStore({ ttl: 0 }) })
  t.teardown(() => gone.close())
  const { error } = await call(gone.endpoint, 'SendMessage', { message: userMessage('hello') })
  t.equal(error.code, -32001)
  t.match(error.message, /^Task not found: [0-9a-f-]{36}$/)
  t.equal((await call(gone.endpoint, 'SendMessage', { message: userMessage('input') })).result.task.status.state, 'TASK_STATE_INPUT_REQUIRED', 'a task still running is answered as ever')
})

t.test('GetTask with historyLength on a SQL store: the latest messages, read alone; an unknown id is TaskNotFound', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'a2a-gettask-'))
  const stores = openSqliteStores({ path: join(dir, 'tasks.db') })
  const sqlite = await startServer({ taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore })
  t.teardown(async () => {
    await sqlite.close()
    stores.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const task = (await result(sqlite.endpoint, 'SendMessage', { message: userMessage('input') })).task
  const answer = userMessage('the answer', { taskId: task.id })
  await result(sqlite.endpoint, 'SendMessage', { message: answer })
  const whole = await result(sqlite.endpoint, 'GetTask', { id: task.id })
  t.equal(whole.history.length, 3, 'the first message, the agent\'s question, the answer')
  t.same((await result(sqlite.endpoint, 'GetTask', { id: task.id, historyLength: 1 })).history, [whole.history[2]], 'the latest one')
  t.same((await result(sqlite.endpoint, 'GetTask', { id: task.id, historyLength: 2 })).history, whole.history.slice(1), 'the latest two, in order')
  const none = await result(sqlite.endpoint, 'GetTask', { id: task.id, historyLength: 0 })
  t.equal(none.history, undefined, 'historyLength 0: no history')
  t.same(none.artifacts, whole.artifacts, 'the artifacts whatever historyLength says')
  t.equal((await call(sqlite.endpoint, 'GetTask', { id: 'missing', historyLength: 1 })).error.code, -32001)
})

t.test('the task\'s SUBMITTED timestamp is no later than the status event that created it, even when the clock ticks between them', async t => {
  // A clock that moves on at every reading: the order of the readings is the order of the times.
  const realNow = Date.now
  let tick = realNow()
  Date.now = () => ++tick
  t.teardown(() => { Date.now = realNow })
  const context = { binding: 'test', method: 'SendStreamingMessage', serviceParams: {}, tenant: '', extensions: [] }
  const events = []
  for await (const event of await server.fastify.a2a.handler.sendStreamingMessage({ message: userMessage('stream 1') }, context)) events.push(event)
  Date.now = realNow
  const submitted = events[0]?.task?.status.timestamp as string
  const working = events[1]?.statusUpdate?.status
  t.equal(working?.state, 'TASK_STATE_WORKING')
  t.ok(submitted <= (working?.timestamp as string), `SUBMITTED ${submitted}, then WORKING ${working?.timestamp}`)
})
