// The PostgreSQL cluster store on its own: liveness by the database's clock, leases and
// orphans, one winner when instances race for the same orphan or the same messageId, and the
// push outbox handed over in order.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { openPostgresStores, type PostgresClusterStore } from '../lib/index.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { eventually } from './helpers/server.js'

const url = await requirePostgres(t)
if (url !== undefined) {
  const schema = uniqueSchema('cluster_store')
  const stores = await openPostgresStores({ connectionString: url, schema })
  t.teardown(async () => {
    await stores.close()
    await dropSchemas(url, [schema])
  })
  const store: PostgresClusterStore = stores.clusterStore
  const LIVE = 60_000
  let tasks = 0
  const newTask = () => ({ tenant: 'acme', taskId: `task-${++tasks}` })
  /** An instance that registered for `ms` and is dead once they passed. */
  async function dying (name: string, ms = 50): Promise<void> {
    await store.register(name, ms)
    await sleep(ms + 20)
  }

  t.test('a lease is live while its instance renews; a renewal after it lapsed says so', async t => {
    const key = newTask()
    // A second of lease: registering, acquiring, reading and renewing all fall within it on a loaded machine.
    await store.register('short', 1000)
    await store.acquire('short', key)
    t.same(await store.owners(key), ['short'])
    t.equal(await store.renew('short', 1000), true)
    await eventually(async () => (await store.owners(key)).length === 0)
    t.equal(await store.renew('short', 200), false, 'too late: others may have taken its work')
    t.same(await store.orphans(100), [key], 'its task is an orphan now')
    await store.release('short', key)
    t.same(await store.orphans(100), [])
  })

  t.test('two instances racing for an orphan: one claims it, and holds it', async t => {
    const key = newTask()
    await store.register('left', LIVE)
    await store.register('right', LIVE)
    await dying('gone')
    await store.acquire('gone', key)
    const claims = await Promise.all([store.claim('left', key), store.claim('right', key)])
    t.same(claims.filter(Boolean), [true], 'exactly one winner')
    const winner = claims[0] === true ? 'left' : 'right'
    t.same(await store.owners(key), [winner], 'the dead lease is gone, the winner holds it')
    t.equal(await store.claim(winner === 'left' ? 'right' : 'left', key), false, 'a live holder: nothing to claim')
    t.same(await store.orphans(100), [])
  })

  t.test('two sendings of one messageId racing: one records it, the other learns its task', async t => {
    const answers = await Promise.all([store.claimMessage('acme', 'msg-race', 'first'), store.claimMessage('acme', 'msg-race', 'second')])
    const recorded = answers.indexOf(undefined)
    t.not(recorded, -1)
    t.equal(answers[1 - recorded], recorded === 0 ? 'first' : 'second')
    t.equal(await store.claimMessage('other-tenant', 'msg-race', 'third'), undefined, 'per tenant')
    t.equal(await store.reclaimMessage('acme', 'msg-race', 'nope', 'fourth'), false)
    await store.forgetMessage('acme', 'msg-race', recorded === 0 ? 'first' : 'second')
    t.equal(await store.claimMessage('acme', 'msg-race', 'fifth'), undefined, 'forgotten: recorded anew')
  })

  t.test("a dead instance's deliveries go to one taker, in order; a leased task's only with its key", async t => {
    await store.register('taker', LIVE)
    await store.register('rival', LIVE)
    const loose = { ...newTask(), contextId: 'c1' }
    const leased = { ...newTask(), contextId: 'c2' }
    await store.register('sender', LIVE)
    await store.acquire('sender', leased)
    const looseIds = await store.recordDeliveries('sender', loose, { task: { id: loose.taskId, status: { state: 'TASK_STATE_WORKING' } } }, ['p1', 'p2'])
    const leasedIds = await store.recordDeliveries('sender', leased, { task: { id: leased.taskId, status: { state: 'TASK_STATE_WORKING' } } }, ['p3'])
    t.equal(await store.ownsDelivery('sender', looseIds[0] as string), true)
    await store.deregister('sender')
    // deregister removed the lease: the leased task's row is loose too now; give it a dead lease again.
    await dying('sender-again')
    await store.acquire('sender-again', leased)
    const [first, second] = await Promise.all([store.takeDeliveries('taker'), store.takeDeliveries('rival')])
    const taken = [...(first ?? []), ...(second ?? [])]
    t.same(taken.map(delivery => delivery.id), looseIds, 'the loose ones, in recording order')
    t.ok(first?.length === 0 || second?.length === 0, 'all to one taker')
    t.same(taken.map(delivery => delivery.configId), ['p1', 'p2'])
    t.equal(await store.ownsDelivery('sender', looseIds[0] as string), false, 'no longer the sender\'s')
    const byKey = await store.takeDeliveries('taker', leased)
    t.same(byKey.map(delivery => [delivery.id, delivery.configId, delivery.contextId]), [[leasedIds[0], 'p3', 'c2']])
    for (const id of [...looseIds, ...leasedIds]) await store.finishDelivery(id as string)
    t.same(await store.takeDeliveries('taker'), [])
  })
}
