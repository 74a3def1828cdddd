// Push delivery exactly once across processes (two conformance agents sharing PostgreSQL
// and Redis, test/helpers/cluster.ts): the instance running the task delivers each event
// once; after SIGKILL of that instance, the delivery it had in flight and those it had not
// sent go out from the other instance, then the task's FAILED end. CancelTask, messageIds
// and SIGKILL seen by a subscriber are in test/cluster-failover.test.ts.
import pg from 'pg'
import t from 'tap'
import { startCluster } from './helpers/cluster.js'
import { checkTakenOver } from './helpers/cluster-core.js'
import { eventually, result, stream, userMessage } from './helpers/server.js'
import { startReceiver } from './helpers/webhook.js'

/** The agents' lease; failover takes about that long. */
const LEASE_TTL_MS = 2000

const [a, b] = await startCluster(t, { env: { A2A_LEASE_TTL_MS: String(LEASE_TTL_MS) } })
if (a !== undefined && b !== undefined) {
  // The first delivery to /in-flight is held unanswered: A is killed with it in flight.
  const receiver = await startReceiver((path, n) => path === '/in-flight' && n === 1 ? new Promise<number>(() => {}) : 200)
  t.teardown(() => receiver.close())
  const pool = new pg.Pool({ connectionString: a.postgres.url })
  t.teardown(() => pool.end())
  const outbox = async () => (await pool.query(`SELECT * FROM ${pg.escapeIdentifier(a.postgres.schema)}.a2a_push_outbox`)).rows

  t.test('the instance running the task delivers each event once', async t => {
    const { events } = await stream(a.origin, 'SendStreamingMessage', {
      message: userMessage('stream 3'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/once` } }
    })
    // A delivery leaves the outbox once its POST was answered; B never held one.
    await eventually(async () => receiver.bodies('/once').length >= events.length && (await outbox()).length === 0, 5000)
    t.same(receiver.bodies('/once'), events.map(event => event.data.result), 'the stream, event for event, once')
  })

  // Last: A is gone afterwards.
  t.test('SIGKILL of A with a delivery in flight: B sends it again, then what A had not sent, then FAILED', async t => {
    const { task } = await result(a.origin, 'SendMessage', {
      message: userMessage('hold'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.origin}/in-flight` } }
    })
    // The task snapshot is in flight (held), the WORKING update recorded behind it.
    await eventually(async () => receiver.bodies('/in-flight').length === 1 && (await outbox()).length === 2, 5000)
    await a.kill('SIGKILL')
    await eventually(() => receiver.bodies('/in-flight').length === 4, 4 * LEASE_TTL_MS)
    const failed = checkTakenOver(t, receiver.bodies('/in-flight'), task.id)
    await eventually(async () => (await outbox()).length === 0)
    t.same((await result(b.origin, 'GetTask', { id: task.id })).status, failed, 'GetTask on B agrees')
  })
}
