// Push delivery across instances: only the instance running the task delivers, each event
// once, through a durable outbox; deliveries its instance left (one in flight included)
// are sent by the instance that takes the task over, before the task's last event; a
// config that missed events its instance stored but never recorded gets the stored task.
import t, { type Test } from 'tap'
import { ORPHAN_MESSAGE, type ClusterStore, type PushDeliveryReport, type PushSender, type StreamResponse } from '../lib/index.js'
import { checkTakenOver, overrideStore, testCluster } from './helpers/cluster-core.js'
import { eventually, result, stream, userMessage } from './helpers/server.js'
import { startReceiver } from './helpers/webhook.js'

const cluster = await testCluster(t)
if (cluster !== undefined) {
  // The first delivery to /in-flight (and to /stopped) is held unanswered: its instance dies (stops) with it in flight.
  const receiver = await startReceiver((path, n) => (path === '/in-flight' || path === '/stopped') && n === 1 ? new Promise<number>(() => {}) : 200)
  t.teardown(() => receiver.close())
  const reports = new Map<string, PushDeliveryReport[]>()
  /** An instance whose delivery reports are kept under `name`; one attempt each, so a dead one does not retry. */
  const start = (name: string, wrapStore?: (store: ClusterStore) => ClusterStore) => {
    reports.set(name, [])
    return cluster.start({ wrapStore, options: { push: { allow: ['127.0.0.1'], maxAttempts: 1, onDelivery: report => reports.get(name)?.push(report) } } })
  }
  const a = await start('a')
  // B sees the same tasks and configs, and must send nothing for A's.
  await start('b')
  const outbox = () => cluster.rows('a2a_push_outbox')
  /** The instances' reports about the task, as [event, outcome]; in order for one instance (A or B takes a task over, not both). */
  const reportsOf = (taskId: string, ...names: string[]) =>
    names.flatMap(name => reports.get(name) ?? []).filter(report => report.taskId === taskId).map(report => [report.event, report.outcome])
  /** A delivery is reported once its answer is read, a moment after the receiver has its body. */
  const reported = (count: number, taskId: string, ...names: string[]) => eventually(() => reportsOf(taskId, ...names).length >= count, 5000)
  /** The FAILED update the taker sends last. */
  const checkFailed = (t: Test, body: any) => {
    t.equal(body.statusUpdate.status.state, 'TASK_STATE_FAILED')
    t.same(body.statusUpdate.status.message.parts, [{ text: ORPHAN_MESSAGE }])
  }

  t.test('the instance running the task delivers every event once; the outbox is empty after', async t => {
    const { events } = await stream(a.endpoint, 'SendStreamingMessage', {
      message: userMessage('stream 3'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/once` } }
    })
    await (a.fastify.a2a.push as PushSender).idle()
    t.same(receiver.bodies('/once'), events.map(event => event.data.result), 'each event of the stream, once, in order')
    t.same(reports.get('a')?.map(report => report.outcome), Array(6).fill('delivered'))
    t.same(reports.get('b'), [], 'B sent nothing')
    await eventually(async () => (await outbox()).length === 0)
    t.pass('the outbox is empty')
  })

  t.test('a delivery in flight when its instance dies is sent again by the taker, then the rest, then the end', async t => {
    const owner = await start('owner')
    const { task } = await result(owner.endpoint, 'SendMessage', {
      message: userMessage('hold'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.origin}/in-flight` } }
    })
    // The task snapshot is in flight (held), the WORKING update recorded behind it.
    await eventually(async () => receiver.bodies('/in-flight').length === 1 && (await outbox()).length === 2)
    await owner.cutOff()
    await eventually(() => receiver.bodies('/in-flight').length === 4, 5000)
    checkTakenOver(t, receiver.bodies('/in-flight'), task.id)
    await reported(3, task.id, 'a', 'b')
    t.same(reportsOf(task.id, 'a', 'b'), [['task', 'delivered'], ['statusUpdate', 'delivered'], ['statusUpdate', 'delivered']])
    await eventually(async () => (await outbox()).length === 0)
    t.pass('the outbox is empty')
  })

  t.test('a graceful stop leaves its pending deliveries to the others: it reports none of them dropped, the taker delivers and reports each once', async t => {
    const stopping = await start('stopping')
    const { task } = await result(stopping.endpoint, 'SendMessage', {
      message: userMessage('stream 1'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/stopped` } }
    })
    // The task snapshot is in flight (held), the task's three other events recorded behind it.
    await eventually(async () => receiver.bodies('/stopped').length === 1 && (await outbox()).length === 4)
    await stopping.close()
    t.same(reportsOf(task.id, 'stopping'), [], 'no report from the instance that stopped')
    t.same((stopping.fastify.a2a.push as PushSender).stats, { delivered: 0, failed: 0, refused: 0, dropped: 0 }, 'nothing counted dropped')
    await reported(4, task.id, 'a', 'b')
    const events = ['statusUpdate', 'artifactUpdate', 'statusUpdate']
    t.same(receiver.bodies('/stopped').map(body => Object.keys(body)[0]), ['task', 'task', ...events], 'the delivery in flight, sent again by the taker, then the rest')
    t.same(reportsOf(task.id, 'a', 'b'), ['task', ...events].map(event => [event, 'delivered']), 'each event reported once, by the taker')
    await eventually(async () => (await outbox()).length === 0)
    t.pass('the outbox is empty')
  })

  t.test('an event stored and never recorded (its instance died in between): the taker sends the stored task, then the end', async t => {
    let hung: StreamResponse | undefined
    // The WORKING update's deliveries are never recorded: its instance dies first.
    const owner = await start('hung', store => overrideStore(store, {
      recordDeliveries: (...args) => args[2].statusUpdate === undefined ? store.recordDeliveries(...args) : new Promise<string[]>(() => { hung = args[2] })
    }))
    const { task } = await result(owner.endpoint, 'SendMessage', {
      message: userMessage('hold'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.origin}/missed` } }
    })
    await eventually(async () => hung !== undefined && receiver.bodies('/missed').length === 1 && (await outbox()).length === 0)
    await owner.cutOff()
    await eventually(() => receiver.bodies('/missed').length === 3, 5000)
    const [first, snapshot, failed] = receiver.bodies('/missed')
    t.equal(first.task.status.state, 'TASK_STATE_SUBMITTED', 'the task, recorded and delivered by its instance')
    t.strictSame(snapshot, { task: { ...first.task, status: hung?.statusUpdate?.status } }, 'the stored task, holding the WORKING status never recorded')
    checkFailed(t, failed)
    t.equal(receiver.bodies('/missed').length, 3, 'nothing more')
    await reported(1, task.id, 'hung')
    await reported(2, task.id, 'a', 'b')
    t.same(reportsOf(task.id, 'hung'), [['task', 'delivered']])
    t.same(reportsOf(task.id, 'a', 'b'), [['task', 'delivered'], ['statusUpdate', 'delivered']], 'the taker sent the stored task, then the end')
    await eventually(async () => (await outbox()).length === 0)
    t.pass('the outbox is empty')
  })

  t.test('the last event stored and never recorded: the lease stays until it is, so the taker sends the ended task', async t => {
    let hung: StreamResponse | undefined
    const owner = await start('ended', store => overrideStore(store, {
      recordDeliveries: (...args) => args[2].statusUpdate?.status.state !== 'TASK_STATE_COMPLETED'
        ? store.recordDeliveries(...args)
        : new Promise<string[]>(() => { hung = args[2] })
    }))
    const { task } = await result(owner.endpoint, 'SendMessage', {
      message: userMessage('stream 1'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/ended` } }
    })
    await eventually(async () => hung !== undefined && receiver.bodies('/ended').length === 3 && (await outbox()).length === 0)
    t.same(await cluster.leases(task.id), [owner.member.instanceId], 'the lease waits for the recording')
    await owner.cutOff()
    await eventually(() => receiver.bodies('/ended').length === 4, 5000)
    const [first, working, artifact, snapshot] = receiver.bodies('/ended')
    t.equal(working.statusUpdate.status.state, 'TASK_STATE_WORKING')
    t.strictSame(snapshot, { task: { ...first.task, status: hung?.statusUpdate?.status, artifacts: [artifact.artifactUpdate.artifact] } },
      'the stored task, COMPLETED; no FAILED update, the task had ended')
    await reported(1, task.id, 'a', 'b')
    t.same(reportsOf(task.id, 'a', 'b'), [['task', 'delivered']])
    await eventually(async () => (await cluster.leases(task.id)).length === 0)
    t.equal(receiver.bodies('/ended').length, 4, 'nothing more')
    await eventually(async () => (await cluster.rows('a2a_push_marks', 'task_id = $1', [task.id])).length === 0)
    t.pass('the ended task\'s marks are tidied away')
  })

  t.test('a config created while the task runs is owed only the events after it: nothing missed, no stored task', async t => {
    const owner = await start('created')
    const { task } = await result(owner.endpoint, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
    await eventually(async () => (await cluster.rows('a2a_tasks', 'id = $1 AND state = $2', [task.id, 'TASK_STATE_WORKING'])).length === 1)
    await result(owner.endpoint, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: `${receiver.origin}/created` })
    await owner.cutOff()
    await eventually(() => receiver.bodies('/created').length === 1, 5000)
    checkFailed(t, receiver.bodies('/created')[0])
    await reported(1, task.id, 'a', 'b', 'created')
    t.same(reportsOf(task.id, 'a', 'b', 'created'), [['statusUpdate', 'delivered']])
  })
}
