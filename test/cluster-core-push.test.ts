// Push delivery across instances: only the instance running the task delivers, each event
// once, through a durable outbox; deliveries its instance left (one in flight included)
// are sent by the instance that takes the task over, before the task's last event.
import t from 'tap'
import type { PushDeliveryReport, PushSender } from '../lib/index.js'
import { checkTakenOver, testCluster } from './helpers/cluster-core.js'
import { eventually, result, stream, userMessage } from './helpers/server.js'
import { startReceiver } from './helpers/webhook.js'

const cluster = await testCluster(t)
if (cluster !== undefined) {
  // The first delivery to /in-flight is held unanswered: its instance dies with it in flight.
  const receiver = await startReceiver((path, n) => path === '/in-flight' && n === 1 ? new Promise<number>(() => {}) : 200)
  t.teardown(() => receiver.close())
  const reports = new Map<string, PushDeliveryReport[]>()
  /** An instance whose delivery reports are kept under `name`; one attempt each, so a dead one does not retry. */
  const start = (name: string) => {
    reports.set(name, [])
    return cluster.start({ options: { push: { allow: ['127.0.0.1'], maxAttempts: 1, onDelivery: report => reports.get(name)?.push(report) } } })
  }
  const a = await start('a')
  // B sees the same tasks and configs, and must send nothing for A's.
  await start('b')
  const outbox = () => cluster.rows('a2a_push_outbox')

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
    const taken = [...(reports.get('a') ?? []), ...(reports.get('b') ?? [])].filter(report => report.taskId === task.id)
    t.same(taken.map(report => [report.event, report.outcome]), [['task', 'delivered'], ['statusUpdate', 'delivered'], ['statusUpdate', 'delivered']])
    await eventually(async () => (await outbox()).length === 0)
    t.pass('the outbox is empty')
  })
}
