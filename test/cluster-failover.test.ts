// Three promises of issue 11 across processes (two conformance agents sharing PostgreSQL
// and Redis): CancelTask on B ends `hold` running on A; the same messageId sent to A then B
// starts one task; SIGKILL of A during `hold`: B's subscriber gets the terminal state once
// A's lease lapsed, and GetTask on B agrees.
import t from 'tap'
import { ORPHAN_MESSAGE } from '../lib/index.js'
import { startCluster } from './helpers/cluster.js'
import { eventually, result, userMessage } from './helpers/server.js'
import { connect, watchFrames } from './helpers/ws.js'

const [a, b] = await startCluster(t, { env: { A2A_LEASE_TTL_MS: '3000' } })
if (a !== undefined && b !== undefined) {
  /** Starts `hold` on `origin`; resolves with the task, WORKING. */
  const hold = async (origin: string) => {
    const { task } = await result(origin, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
    // The answer comes at SUBMITTED; the WORKING write may still be on its way.
    await eventually(async () => (await result(origin, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    return task
  }

  t.test('hold on A, CancelTask on B: B answers with the canceled task; A agrees', async t => {
    const task = await hold(a.origin)
    const canceled = await result(b.origin, 'CancelTask', { id: task.id })
    t.equal(canceled.id, task.id)
    t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
    t.equal((await result(a.origin, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
  })

  t.test('the same messageId sent to A, then to B, gives one task', async t => {
    const message = userMessage('once')
    const onA = await result(a.origin, 'SendMessage', { message })
    const onB = await result(b.origin, 'SendMessage', { message })
    t.equal(onA.task.status.state, 'TASK_STATE_COMPLETED')
    t.equal(onB.task.id, onA.task.id, 'B answers with the task A started')
    t.same(onB.task.artifacts, onA.task.artifacts)
    const { tasks } = await result(b.origin, 'ListTasks', { contextId: onA.task.contextId })
    t.same(tasks.map((task: any) => task.id), [onA.task.id], 'and no second task exists')
  })

  // Last: A is gone afterwards.
  t.test('SIGKILL of A during hold: B\'s subscriber gets the FAILED state, GetTask on B agrees', async t => {
    const task = await hold(a.origin)
    const onB = await connect(b.wsUrl)
    t.teardown(() => onB.close())
    const snapshot = watchFrames(onB, 'follow')
    // The terminal event comes once A's lease (3 s) lapsed: longer than the helper's 5 s default may allow.
    const subscription = onB.stream('SubscribeToTask', { id: task.id }, 'follow', 20_000)
    await snapshot.reached(1)
    await a.kill('SIGKILL')
    const frames = await subscription
    t.equal(frames[0].result.task.status.state, 'TASK_STATE_WORKING', 'the snapshot, taken while A ran the task')
    const ended = frames.at(-2).result.statusUpdate.status
    t.equal(ended.state, 'TASK_STATE_FAILED')
    t.equal(ended.message.parts[0].text, ORPHAN_MESSAGE)
    t.same(frames.at(-1).result, { status: 'stream_complete' })
    const stored = await result(b.origin, 'GetTask', { id: task.id })
    t.equal(stored.status.state, 'TASK_STATE_FAILED')
    t.equal(stored.status.message.parts[0].text, ORPHAN_MESSAGE)
  })
}
