// Failover: the instance running a task holds a lease renewed by heartbeat. When it dies,
// another instance claims its tasks once the lease lapsed and ends them FAILED (or resumes
// them, with `onOrphan: 'resume'`); subscribers on live instances get the terminal event.
// A lease whose release failed is given back at a later heartbeat: a live instance's never lapses.
import t from 'tap'
import { ORPHAN_MESSAGE, type AgentExecutor, type ClusterStore, type Task } from '../lib/index.js'
import { conformanceAgent } from '../examples/agent.js'
import { overrideStore, testCluster, type TestCluster } from './helpers/cluster-core.js'
import { eventually, openSse, result, userMessage } from './helpers/server.js'

/** Failover takes the lease (1 s) and one sweep; this bounds the waits below, well above it. */
const FAILOVER_MS = 5000

const cluster = await testCluster(t)
if (cluster !== undefined) {
  const observer = await cluster.start()

  async function hold (endpoint: string): Promise<any> {
    const { task } = await result(endpoint, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    return task
  }

  /** SubscribeToTask over JSON-RPC SSE, open once its first event (the task) arrived. */
  const subscribe = (endpoint: string, id: string) =>
    openSse(endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id } }, 1)

  const orphanMessage = (task: Task) => ({ role: 'ROLE_AGENT', parts: [{ text: ORPHAN_MESSAGE }], taskId: task.id, contextId: task.contextId })

  t.test('the owner dies during hold: a subscriber on another instance gets FAILED, and GetTask agrees', async t => {
    const owner = await cluster.start()
    const task = await hold(owner.endpoint)
    const subscription = await subscribe(observer.endpoint, task.id)
    await owner.cutOff()
    await subscription.ended
    const events = subscription.events.map(event => event.data.result)
    t.equal(events.length, 2)
    t.equal(events[0].task.status.state, 'TASK_STATE_WORKING')
    const { status } = events[1].statusUpdate
    t.equal(status.state, 'TASK_STATE_FAILED')
    t.match(status.message, orphanMessage(task), 'the status message says the instance stopped')
    const stored = await result(observer.endpoint, 'GetTask', { id: task.id })
    t.same(stored.status, status)
    t.same(stored.history.at(-1), status.message, 'in the history too')
    await eventually(async () => (await cluster.leases(task.id)).length === 0)
    t.pass('no lease is left')
  })

  t.test('a task left running with no lease (a crash before the cluster) is failed; an interrupted one waits on', async t => {
    const scope = { tenant: '' }
    const seeded = (id: string, state: Task['status']['state']): Task =>
      ({ id, contextId: `ctx-${id}`, status: { state }, history: [{ messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text: id }] }] })
    await observer.stores.taskStore.create(seeded('left-working', 'TASK_STATE_WORKING'), scope)
    await observer.stores.taskStore.create(seeded('left-input', 'TASK_STATE_INPUT_REQUIRED'), scope)
    let failed: any
    await eventually(async () => (failed = await result(observer.endpoint, 'GetTask', { id: 'left-working' })).status.state === 'TASK_STATE_FAILED', FAILOVER_MS)
    t.match(failed.status.message, orphanMessage(seeded('left-working', 'TASK_STATE_WORKING')))
    t.equal((await result(observer.endpoint, 'GetTask', { id: 'left-input' })).status.state, 'TASK_STATE_INPUT_REQUIRED')
  })

  t.test("onOrphan 'resume': the instance that claims the task hands it to executor.resume", async t => {
    const resumable: AgentExecutor = {
      execute: conformanceAgent.execute,
      async resume (context, events) {
        await events.artifact({ artifactId: 'resumed', parts: [{ text: `resumed ${context.task?.status.state} after ${context.message.parts[0]?.text}` }] })
        await events.completed()
      }
    }
    // A cluster of its own: every instance there resumes.
    const own = await testCluster(t) as TestCluster
    const options = { options: { executor: resumable }, cluster: { onOrphan: 'resume' as const } }
    const owner = await own.start(options)
    const taker = await own.start(options)
    const task = await hold(owner.endpoint)
    const subscription = await subscribe(taker.endpoint, task.id)
    await owner.cutOff()
    await subscription.ended
    const events = subscription.events.map(event => event.data.result)
    t.same(events.slice(1).map(event => Object.keys(event)[0]), ['artifactUpdate', 'statusUpdate'])
    t.same(events[1].artifactUpdate.artifact.parts, [{ text: 'resumed TASK_STATE_WORKING after hold' }])
    t.equal(events[2].statusUpdate.status.state, 'TASK_STATE_COMPLETED')
    await eventually(async () => (await own.leases(task.id)).length === 0)
    t.pass('the resumed execution gives its lease back')
  })

  t.test('an instance whose lease lapsed gives its executions up, then serves again', async t => {
    let stalled: Promise<void> | undefined
    let resume = () => {}
    const stallable = (store: ClusterStore) => overrideStore(store, {
      renew: async (instance, ttl) => {
        await stalled
        return await store.renew(instance, ttl)
      }
    })
    const owner = await cluster.start({ wrapStore: stallable })
    const task = await hold(owner.endpoint)
    stalled = new Promise(resolve => { resume = resolve })
    let failed: any
    await eventually(async () => (failed = await result(observer.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_FAILED', FAILOVER_MS)
    t.equal(owner.fastify.a2a.handler.runningExecutions, 1, 'the owner does not know yet')
    stalled = undefined
    resume()
    await eventually(() => owner.fastify.a2a.handler.runningExecutions === 0, FAILOVER_MS)
    t.same((await result(observer.endpoint, 'GetTask', { id: task.id })).status, failed.status, 'its executor wrote nothing more')

    const next = await hold(owner.endpoint)
    t.equal((await result(observer.endpoint, 'CancelTask', { id: next.id })).status.state, 'TASK_STATE_CANCELED')
    await eventually(() => owner.fastify.a2a.handler.runningExecutions === 0)
    t.pass('it runs tasks as a live owner again: the cancel reached it')
  })
  t.test('a lease whose release failed is given back at the next heartbeat', async t => {
    const releases: string[] = []
    const failingOnce = (store: ClusterStore) => overrideStore(store, {
      release: async (instance, key) => {
        if (releases.length === 0) {
          releases.push('failed')
          throw new Error('release failed on purpose')
        }
        releases.push('done')
        await store.release(instance, key)
      }
    })
    const owner = await cluster.start({ wrapStore: failingOnce })
    const { task } = await result(owner.endpoint, 'SendMessage', { message: userMessage('hello') })
    t.equal(task.status.state, 'TASK_STATE_COMPLETED')
    await eventually(async () => (await cluster.leases(task.id)).length === 0, FAILOVER_MS)
    t.same(releases, ['failed', 'done'], 'released by the second try')
    t.equal((await cluster.rows('a2a_instances', 'id = $1', [owner.member.instanceId])).length, 1, 'while the instance lives on')
  })

  t.test('renewals unanswered within heartbeatInterval count as failed beats: the next heartbeat renews all the same, the late answers are ignored', async t => {
    const held: Array<(outcome: boolean | Error) => void> = []
    let holding = 0
    let renewed = 0
    const stuck = (store: ClusterStore) => overrideStore(store, {
      renew: async (instance, ttl) => {
        if (holding > 0) {
          holding--
          const outcome = await new Promise<boolean | Error>(resolve => held.push(resolve))
          if (outcome instanceof Error) throw outcome
          return outcome
        }
        const alive = await store.renew(instance, ttl)
        renewed++
        return alive
      }
    })
    const owner = await cluster.start({ wrapStore: stuck, cluster: { leaseTtl: 3000, heartbeatInterval: 200 } })
    const task = await hold(owner.endpoint)
    holding = 2
    const before = renewed
    await eventually(() => held.length === 2 && renewed > before)
    t.pass('two renewals hung (a connection gone silent), and the heartbeat after them renewed')
    held[0]?.(true)
    held[1]?.(new Error('an answer after the next heartbeat'))
    const after = renewed
    await eventually(() => renewed > after + 1)
    t.equal(owner.fastify.a2a.handler.runningExecutions, 1, 'its execution runs on')
    t.equal((await cluster.rows('a2a_instances', 'id = $1 AND expires_at > clock_timestamp()', [owner.member.instanceId])).length, 1, 'the instance is alive')
    t.same(await cluster.leases(task.id), [owner.member.instanceId], 'and holds its task')
    await result(owner.endpoint, 'CancelTask', { id: task.id })
  })

  t.test('fastify.close() with a sweep, then the deregistration, left unanswered: each is waited for heartbeatInterval at most', async t => {
    let hanging = false
    let sweepsHeld = 0
    const never = new Promise<never>(() => {})
    const silent = (store: ClusterStore) => overrideStore(store, {
      orphans: async (limit) => {
        if (!hanging) return await store.orphans(limit)
        sweepsHeld++
        return await never
      },
      deregister: async (instance) => hanging ? await never : await store.deregister(instance)
    })
    const instance = await cluster.start({ wrapStore: silent, cluster: { heartbeatInterval: 200 } })
    hanging = true
    await eventually(() => sweepsHeld > 0)
    const closed = await Promise.race([instance.close().then(() => 'closed'), new Promise(resolve => setTimeout(resolve, 5000, 'TIMEOUT').unref())])
    t.equal(closed, 'closed')
    t.equal((await cluster.rows('a2a_instances', 'id = $1', [instance.member.instanceId])).length, 1, 'not deregistered: the instance expires instead')
  })
}
