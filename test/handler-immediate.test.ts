// A store with immediate operations (the memory store's `immediate`): an executor's event
// is stored and published before the call that emits it returns, without a promise per
// store call. Any other store is awaited. Both give the same task, the same events, in order;
// with one that is awaited, events emitted without awaiting each queue, and apply in order.
import t from 'tap'
import { MemoryTaskStore, openSqliteStores, type AgentExecutor, type TaskStore } from '../lib/index.js'
import { result, startServer, stream, userMessage } from './helpers/server.js'

const DEFAULT = { tenant: '' }

/** The executor notes the state stored right after `working()` is called, before awaiting it. */
function observing (store: MemoryTaskStore, seen: Array<string | undefined>): AgentExecutor {
  return {
    async execute (context, events) {
      const working = events.working()
      seen.push(store.getNow(context.taskId, DEFAULT)?.status.state)
      await working
      await events.artifact({ artifactId: 'a', parts: [{ text: 'one' }] })
      await events.artifact({ artifactId: 'a', parts: [{ text: 'two' }] }, { append: true, lastChunk: true })
      await events.completed()
    }
  }
}

/** The same store behind plain async methods: no `immediate`. */
function awaited (inner: MemoryTaskStore): TaskStore {
  return {
    isolatesTenants: true,
    create: (task, scope) => inner.create(task, scope),
    get: (id, scope) => inner.get(id, scope),
    update: (id, change, scope) => inner.update(id, change, scope),
    list: (query, scope) => inner.list(query, scope)
  }
}

t.test('the memory store: the event is applied when the call returns; other stores: once their promises settle; same results', async t => {
  const outcomes = []
  for (const immediate of [true, false]) {
    const inner = new MemoryTaskStore()
    const seen: Array<string | undefined> = []
    const server = await startServer({ executor: observing(inner, seen), taskStore: immediate ? inner : awaited(inner) })
    t.teardown(() => server.close())
    t.equal(server.fastify.a2a.taskStore.immediate === undefined, !immediate)
    const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('x') })).task
    const streamed = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage('y') })
    // Awaited, the task is created (the inner store's create ran before its promise settled) but not yet WORKING.
    t.same(seen, immediate ? ['TASK_STATE_WORKING', 'TASK_STATE_WORKING'] : ['TASK_STATE_SUBMITTED', 'TASK_STATE_SUBMITTED'])
    outcomes.push({
      state: task.status.state,
      artifacts: task.artifacts,
      history: task.history.map((message: { role: string }) => message.role),
      events: streamed.events.map(event => Object.keys((event.data as { result: object }).result)[0])
    })
  }
  t.same(outcomes[0], {
    state: 'TASK_STATE_COMPLETED',
    artifacts: [{ artifactId: 'a', parts: [{ text: 'one' }, { text: 'two' }] }],
    history: ['ROLE_USER'],
    events: ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate']
  })
  t.same(outcomes[1], outcomes[0], 'the awaited store gives the same')
})

t.test('a subclass that overrides an operation is called through it, not through the immediate ones', async t => {
  class Counting extends MemoryTaskStore {
    updates = 0
    override async update (...args: Parameters<MemoryTaskStore['update']>): ReturnType<MemoryTaskStore['update']> {
      this.updates++
      return await super.update(...args)
    }
  }
  const store = new Counting()
  t.equal(store.immediate, undefined)
  t.equal(new MemoryTaskStore().immediate instanceof MemoryTaskStore, true)
  const server = await startServer({ taskStore: store })
  t.teardown(() => server.close())
  t.equal((await result(server.endpoint, 'SendMessage', { message: userMessage('hello') })).task.status.state, 'TASK_STATE_COMPLETED')
  t.equal(store.updates, 3, 'working, the artifact, completed')
})

t.test('the immediate operations give what the async ones give', async t => {
  const store = new MemoryTaskStore()
  const timestamp = new Date().toISOString()
  t.equal(store.createNow({ id: 't', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED', timestamp } }, DEFAULT), 1)
  t.equal(store.updateNow('t', { kind: 'status', status: { state: 'TASK_STATE_WORKING', timestamp } }, DEFAULT), 2)
  t.equal(await store.update('t', { kind: 'status', status: { state: 'TASK_STATE_COMPLETED', timestamp } }, DEFAULT), 3)
  t.equal(store.getNow('t', DEFAULT), await store.get('t', DEFAULT))
  t.equal(store.getNow('t', DEFAULT)?.status.state, 'TASK_STATE_COMPLETED')
  t.equal(store.updateNow('missing', { kind: 'status', status: { state: 'TASK_STATE_WORKING', timestamp } }, DEFAULT), undefined)
  t.equal(store.getNow('t', { tenant: 'other' }), undefined)
})

t.test('an executor that emits 20,000 events without awaiting each, on sqlite: they queue behind the store and apply in order, none through an Array shift()', async t => {
  const count = 20_000
  const applied: number[] = []
  const executor: AgentExecutor = {
    async execute (_context, events) {
      await events.working()
      const pending: Array<Promise<void>> = []
      for (let i = 0; i < count; i++) {
        pending.push(events.artifact({ artifactId: 'a', parts: [{ text: String(i) }] }, { append: i > 0 }).then(() => { applied.push(i) }))
      }
      await Promise.all(pending)
      await events.completed()
    }
  }
  const stores = openSqliteStores({ path: ':memory:' })
  const server = await startServer({ executor, taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore })
  t.teardown(async () => {
    await server.close()
    stores.close()
  })
  // Array.prototype.shift() copies an array longer than about 16K items at each call: the
  // queue is not to be drained with it (a short array's shift is cheap, and allowed).
  const { shift } = Array.prototype
  let longestShifted = 0
  Array.prototype.shift = function (this: unknown[]) {
    longestShifted = Math.max(longestShifted, this.length)
    return shift.call(this)
  }
  let task
  try {
    task = (await result(server.endpoint, 'SendMessage', { message: userMessage('x') })).task
  } finally {
    Array.prototype.shift = shift
  }
  t.equal(task.status.state, 'TASK_STATE_COMPLETED')
  t.equal(applied.length, count)
  t.ok(applied.every((index, i) => index === i), 'each event\'s promise settled in the order it was emitted')
  const parts = (await result(server.endpoint, 'GetTask', { id: task.id })).artifacts[0].parts as Array<{ text: string }>
  t.equal(parts.length, count)
  t.ok(parts.every((part, i) => part.text === String(i)), 'the chunks stored in order')
  t.ok(longestShifted <= 100, `the longest array shift() was called on held ${longestShifted}`)
})
