// Two servers sharing one task store without `cluster`, as two processes on one database
// would: a task one of them ended stays ended. The store refuses any change to a terminal
// task (TaskTerminalError), and the server whose executor still ran takes the end: the
// executor is aborted, its later events are ignored, and its callers get the stored end.
// Run over the memory store (one object shared), SQLite (two connections to one file) and
// PostgreSQL (two pools on one schema).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import {
  MemoryPushConfigStore, MemoryTaskStore, openPostgresStores, openSqliteStores,
  type AgentExecutor, type PushConfigStore, type TaskChange, type TaskStore
} from '../lib/index.js'
import { dropSchemas, postgresUrl, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { call, eventually, result, startServer, stream, userMessage } from './helpers/server.js'

interface SharedStores {
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
}

const dir = mkdtempSync(join(tmpdir(), 'a2a-shared-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

const pgUrl = await postgresUrl()
const schemas: string[] = []
if (pgUrl !== undefined) t.teardown(() => dropSchemas(pgUrl, schemas))

/** Two handles on one store, closed at teardown. */
const kinds: Record<string, (t: Test) => Promise<[SharedStores, SharedStores]>> = {
  async memory () {
    const pushConfigStore = new MemoryPushConfigStore()
    const stores = { taskStore: new MemoryTaskStore({ pushConfigStore }), pushConfigStore }
    return [stores, stores]
  },
  async sqlite (t) {
    const path = join(dir, `shared-${++files}.db`)
    const first = openSqliteStores({ path })
    const second = openSqliteStores({ path })
    t.teardown(() => { first.close(); second.close() })
    return [first, second]
  }
}
if (pgUrl === undefined) {
  t.test('postgres: the same cases', async t => { await requirePostgres(t) })
} else {
  kinds.postgres = async (t) => {
    const schema = uniqueSchema('shared')
    schemas.push(schema)
    const first = await openPostgresStores({ connectionString: pgUrl, schema })
    const second = await openPostgresStores({ connectionString: pgUrl, schema })
    t.teardown(() => Promise.all([first.close(), second.close()]))
    return [first, second]
  }
}

type LateEvent = 'artifact' | 'message' | 'status'

/**
 * An executor that works, waits for `release()`, then sends a `late` event (an artifact, a
 * message, or a status with a message) and completes; it records whether it was aborted by then.
 */
function heldExecutor (late: LateEvent = 'artifact') {
  let release!: () => void
  const released = new Promise<void>(resolve => { release = resolve })
  const seen = { abortedAtRelease: undefined as boolean | undefined, abortedAfterLate: undefined as boolean | undefined }
  const executor: AgentExecutor = {
    async execute (context, events) {
      await events.working()
      await released
      seen.abortedAtRelease = context.signal.aborted
      if (late === 'artifact') await events.artifact({ artifactId: 'late', parts: [{ text: 'too late' }] })
      else if (late === 'message') await events.message('too late')
      else await events.working('too late')
      seen.abortedAfterLate = context.signal.aborted
      await events.completed()
    }
  }
  return { executor, release, seen }
}

async function serve (t: Test, stores: SharedStores, executor?: AgentExecutor) {
  const server = await startServer({ ...(executor === undefined ? {} : { executor }), ...stores })
  t.teardown(() => server.close())
  return server
}

/** The id of the one task the store holds, once it is WORKING. */
async function workingTask (endpoint: string): Promise<string> {
  let id = ''
  await eventually(async () => {
    const [task] = (await result(endpoint, 'ListTasks', {})).tasks
    id = task?.id ?? ''
    return task?.status.state === 'TASK_STATE_WORKING'
  })
  return id
}

const lateEvents: LateEvent[] = ['artifact', 'message', 'status']

for (const [kind, open] of Object.entries(kinds)) for (const late of lateEvents) {
  t.test(`${kind}, a late ${late}: a task canceled by the other server stays CANCELED; this one's executor is aborted and its caller gets CANCELED`, async t => {
    const [one, two] = await open(t)
    const held = heldExecutor(late)
    const running = await serve(t, one, held.executor)
    const other = await serve(t, two)

    const sent = result(running.endpoint, 'SendMessage', { message: userMessage('hold') })
    const id = await workingTask(other.endpoint)
    const canceled = await result(other.endpoint, 'CancelTask', { id })
    t.equal(canceled.status.state, 'TASK_STATE_CANCELED', 'the other server cancels it (it runs no executor of it)')

    held.release()
    const { task } = await sent
    t.equal(task.status.state, 'TASK_STATE_CANCELED', 'the blocking caller gets the end the other server wrote')
    t.same(task, await result(other.endpoint, 'GetTask', { id }), 'as stored')
    t.same(task.status, canceled.status, 'the status written by the other server, not one made up here')
    t.notOk(task.artifacts, 'no late artifact was stored')
    t.same(task.history.map((message: { role: string }) => message.role), ['ROLE_USER'], 'no late message was stored')
    t.equal(held.seen.abortedAtRelease, false, 'the executor ran on until its next event')
    t.equal(held.seen.abortedAfterLate, true, `the refused ${late} aborted it`)
    t.equal(running.fastify.a2a.handler.ignoredEvents, 2, `the refused ${late} and the completed() after it were ignored`)
    await eventually(() => running.fastify.a2a.handler.activeTasks === 0)
    t.equal((await call(running.endpoint, 'GetTask', { id: 'nope' })).error.code, -32001, 'the server goes on')
  })
}

t.test('sqlite: a stream on the server whose executor runs ends with the CANCELED status the other server wrote, not its late message', async t => {
  const [one, two] = await kinds.sqlite!(t)
  const held = heldExecutor('message')
  const running = await serve(t, one, held.executor)
  const other = await serve(t, two)

  const streamed = stream(running.endpoint, 'SendStreamingMessage', { message: userMessage('hold') })
  const id = await workingTask(other.endpoint)
  const canceled = await result(other.endpoint, 'CancelTask', { id })
  held.release()
  const { events } = await streamed
  const contextId = canceled.contextId
  t.same(events.map(event => event.data.result), [
    { task: events[0]?.data.result.task },
    { statusUpdate: { taskId: id, contextId, status: events[1]?.data.result.statusUpdate.status } },
    { statusUpdate: { taskId: id, contextId, status: canceled.status } }
  ], 'the task, WORKING, then the stored CANCELED status, and the stream ends')
  t.equal(events[1]?.data.result.statusUpdate.status.state, 'TASK_STATE_WORKING')
  t.equal((await result(other.endpoint, 'GetTask', { id })).status.state, 'TASK_STATE_CANCELED')
})

t.test('sqlite: a message to a task the other server cancels while it is being added is refused as for any terminal task', async t => {
  const [one, two] = await kinds.sqlite!(t)
  // The running server's store holds its first history write until the test lets it go.
  let entered!: () => void
  const paused = new Promise<void>(resolve => { entered = resolve })
  let resume!: () => void
  const gate = new Promise<void>(resolve => { resume = resolve })
  let armed = false
  const store = one.taskStore
  const pausing: TaskStore = {
    isolatesTenants: true,
    create: (task, scope) => store.create(task, scope),
    get: (id, scope) => store.get(id, scope),
    getVersioned: (id, scope) => store.getVersioned!(id, scope),
    list: (query, scope) => store.list(query, scope),
    async update (id: string, change: TaskChange, scope) {
      if (armed && change.kind === 'history') {
        armed = false
        entered()
        await gate
      }
      return await store.update(id, change, scope)
    }
  }
  const running = await serve(t, { taskStore: pausing, pushConfigStore: one.pushConfigStore })
  const other = await serve(t, two)

  const { task: waiting } = await result(running.endpoint, 'SendMessage', { message: userMessage('input') })
  t.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED')
  armed = true
  const answer = call(running.endpoint, 'SendMessage', { message: userMessage('the answer', { taskId: waiting.id }) })
  await paused
  t.equal((await result(other.endpoint, 'CancelTask', { id: waiting.id })).status.state, 'TASK_STATE_CANCELED')
  resume()
  const { error } = await answer
  t.same(error, {
    code: -32004,
    message: `Unsupported operation: cannot send a message to task ${waiting.id} in terminal state TASK_STATE_CANCELED`,
    data: error.data
  })
  t.match(error.data, [{ reason: 'UNSUPPORTED_OPERATION', metadata: { taskId: waiting.id, state: 'TASK_STATE_CANCELED' } }])
  const stored = await result(other.endpoint, 'GetTask', { id: waiting.id })
  t.equal(stored.status.state, 'TASK_STATE_CANCELED', 'still CANCELED: no executor ran the message')
  t.notOk(stored.history.some((message: { parts: Array<{ text?: string }> }) => message.parts[0]?.text === 'the answer'), 'the message was not added')
  t.equal(running.fastify.a2a.handler.runningExecutions, 0)
})
