// Start-up recovery: tasks a dead process left SUBMITTED or WORKING in a durable store
// are marked FAILED with a status message (and their push configs told); interrupted
// and terminal tasks are left as they are.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import { a2aWebSocket, failUnfinishedTasks, openSqliteStores, RECOVERY_MESSAGE, type PushSender, type StreamResponse, type Task, type TaskStore } from '../lib/index.js'
import { result, startServer } from './helpers/server.js'
import { startReceiver } from './helpers/webhook.js'
import { logLines } from './helpers/logs.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'

const dir = mkdtempSync(join(tmpdir(), 'a2a-recovery-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

const task = (id: string, state: Task['status']['state']): Task =>
  ({ id, contextId: `ctx-${id}`, status: { state, timestamp: '2025-01-01T00:00:00.000Z' }, history: [{ messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text: id }] }] })

async function seeded () {
  const stores = openSqliteStores({ path: join(dir, `recovery-${++files}.db`) })
  t.teardown(() => stores.close())
  const { taskStore } = stores
  await taskStore.create(task('working', 'TASK_STATE_WORKING'), { tenant: '' })
  await taskStore.create(task('submitted', 'TASK_STATE_SUBMITTED'), { tenant: 'acme' })
  await taskStore.create(task('input', 'TASK_STATE_INPUT_REQUIRED'), { tenant: '' })
  await taskStore.create(task('done', 'TASK_STATE_COMPLETED'), { tenant: '' })
  return stores
}

t.test('unfinished tasks are failed with a status message; their configs get the status update', async t => {
  const stores = await seeded()
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  await stores.pushConfigStore.set({ id: 'p', taskId: 'working', url: `${receiver.origin}/hook`, token: 'tok' }, { tenant: '' })
  const server = await startServer({ taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore, push: { allow: ['127.0.0.1'] } })
  t.teardown(() => server.close())

  const working = await result(server.endpoint, 'GetTask', { id: 'working' })
  t.equal(working.status.state, 'TASK_STATE_FAILED')
  t.equal(working.status.message.role, 'ROLE_AGENT')
  t.same(working.status.message.parts, [{ text: RECOVERY_MESSAGE }])
  t.same(working.history.at(-1), working.status.message, 'the status message is in the history too')
  const submitted = await stores.taskStore.get('submitted', { tenant: 'acme' })
  t.equal(submitted?.status.state, 'TASK_STATE_FAILED', 'every tenant is recovered')
  t.equal((await result(server.endpoint, 'GetTask', { id: 'input' })).status.state, 'TASK_STATE_INPUT_REQUIRED', 'an interrupted task waits on')
  t.equal((await result(server.endpoint, 'GetTask', { id: 'done' })).status.state, 'TASK_STATE_COMPLETED')

  await (server.fastify.a2a.push as PushSender).idle()
  t.same(receiver.bodies('/hook'), [{ statusUpdate: { taskId: 'working', contextId: 'ctx-working', status: working.status } }])
  t.equal(receiver.received[0]?.headers['x-a2a-notification-token'], 'tok')
})

t.test('recoverTasks: false leaves them as they are', async t => {
  const stores = await seeded()
  const server = await startServer({ taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore, recoverTasks: false })
  t.teardown(() => server.close())
  t.equal((await result(server.endpoint, 'GetTask', { id: 'working' })).status.state, 'TASK_STATE_WORKING')
})

t.test('a task that ended after it was listed is left as it ended: not failed, not told, not counted', async t => {
  const stores = await seeded()
  const { taskStore } = stores
  const before = await taskStore.getVersioned?.('working', { tenant: '' })
  const listedThenEnded: TaskStore = {
    create: taskStore.create.bind(taskStore),
    get: taskStore.get.bind(taskStore),
    update: taskStore.update.bind(taskStore),
    list: taskStore.list.bind(taskStore),
    async listUnfinished () {
      const listed = await taskStore.listUnfinished?.() ?? []
      // Another process sharing the store completes the task meanwhile.
      await taskStore.update('working', { kind: 'status', status: { state: 'TASK_STATE_COMPLETED', timestamp: '2025-01-01T00:00:01.000Z' } }, { tenant: '' })
      return listed
    }
  }
  const told: StreamResponse[] = []
  t.equal(await failUnfinishedTasks(listedThenEnded, event => told.push(event)), 1, 'only the submitted task was failed')
  const ended = await taskStore.getVersioned?.('working', { tenant: '' })
  t.equal(ended?.task.status.state, 'TASK_STATE_COMPLETED', 'the end written meanwhile stays')
  t.same(ended?.task.history, before?.task.history, 'no recovery message was added')
  t.equal(ended?.version, (before?.version ?? 0) + 1, 'nothing but the completion was written')
  t.same(told.map(event => [event.statusUpdate?.taskId, event.statusUpdate?.status.state]), [['submitted', 'TASK_STATE_FAILED']])
})

t.test('how many tasks were failed is logged, once, at start-up; nothing when there were none', async t => {
  const stores = await seeded()
  for (const expected of [[2], []]) {
    const { stream, lines } = logLines()
    const fastify = Fastify({ logger: { level: 'info', stream } })
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore })
    await fastify.ready()
    await fastify.close()
    const recovered = lines.map(line => JSON.parse(line)).filter(entry => entry.msg === 'A2A recovery: tasks a dead process left running marked FAILED')
    t.same(recovered.map(entry => [entry.level, entry.failed]), expected.map(failed => [30, failed]))
  }
})
