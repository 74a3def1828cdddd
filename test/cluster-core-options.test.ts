// The `cluster` option: checked once at registration, each error naming its option; the
// documented defaults; and the start-up recovery of one instance turned off, since failover
// recovers tasks by lease.
import Fastify from 'fastify'
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { a2aWebSocket, MemoryEventBus, type A2APluginOptions, type ClusterStore } from '../lib/index.js'

/** A store that holds nothing: enough to register an instance without a database. */
const emptyStore = (): ClusterStore => ({
  register: async () => {},
  renew: async () => true,
  deregister: async () => {},
  nextExpiry: async () => undefined,
  acquire: async () => {},
  release: async () => {},
  releaseAll: async () => {},
  owners: async () => [],
  orphans: async () => [],
  claim: async () => false,
  claimMessage: async () => undefined,
  reclaimMessage: async () => false,
  forgetMessage: async () => {},
  recordDeliveries: async (_instance, _key, _event, configIds) => configIds.map(String),
  markConfig: async () => {},
  configsBehind: async () => [],
  ownsDelivery: async () => true,
  finishDelivery: async () => {},
  takeDeliveries: async () => [],
  tidy: async () => {}
})

async function register (options: Partial<A2APluginOptions>) {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, bus: new MemoryEventBus(), ...options } as A2APluginOptions)
  return fastify
}

t.test('bad cluster options fail registration with an error naming the option', async t => {
  const store = emptyStore()
  const cases: Array<[Partial<A2APluginOptions>, string]> = [
    [{ cluster: 'yes' as never }, 'cluster'],
    [{ cluster: { store: {} as never } }, 'cluster.store'],
    [{ cluster: { store }, bus: undefined }, 'bus'],
    [{ cluster: { store }, bus: { publish () {}, subscribe: () => () => {}, listenerCount: () => 0 } }, 'bus'],
    [{ cluster: { store }, recoverTasks: true }, 'recoverTasks'],
    [{ cluster: { store, instanceId: '' } }, 'cluster.instanceId'],
    [{ cluster: { store, onOrphan: 'retry' as never } }, 'cluster.onOrphan'],
    [{ cluster: { store, onOrphan: 'resume' } }, 'cluster.onOrphan'],
    [{ cluster: { store, leaseTtl: 0 } }, 'cluster.leaseTtl'],
    [{ cluster: { store, leaseTtl: 1000, heartbeatInterval: 1000 } }, 'cluster.heartbeatInterval'],
    [{ cluster: { store, sweepInterval: 1.5 } }, 'cluster.sweepInterval'],
    [{ cluster: { store, cancelTimeout: -1 } }, 'cluster.cancelTimeout'],
    [{ cluster: { store, leaseTtl: 2 ** 31 } }, 'cluster.leaseTtl'],
    [{ cluster: { store, heartbeatInterval: 2 ** 31 } }, 'cluster.heartbeatInterval'],
    [{ cluster: { store, sweepInterval: 2 ** 31 } }, 'cluster.sweepInterval'],
    [{ cluster: { store, cancelTimeout: 2 ** 31 } }, 'cluster.cancelTimeout'],
    [{ cluster: { store, messageIdTtl: 'x' as never } }, 'cluster.messageIdTtl']
  ]
  for (const [options, name] of cases) {
    await t.rejects(register(options), { code: 'A2A_ERR_INVALID_OPTION', message: new RegExp(`^Invalid option ${name.replace('.', '\\.')}:`) }, name)
  }
})

t.test('the defaults: a 30 s lease renewed and swept every 10 s, cancels waited for 30 s, orphans failed, messageIds kept 24 h', async t => {
  const fastify = await register({ cluster: { store: emptyStore() } })
  const { instanceId, store: _store, ...timing } = fastify.a2a.cluster?.options ?? {} as never
  t.match(instanceId, /^[0-9a-f-]{36}$/, 'a random instance id')
  t.same(timing, { leaseTtl: 30_000, heartbeatInterval: 10_000, sweepInterval: 10_000, cancelTimeout: 30_000, onOrphan: 'fail', messageIdTtl: 86_400_000 })
})

t.test('the timing follows leaseTtl; resume needs executor.resume', async t => {
  const executor = { ...conformanceAgent, resume: conformanceAgent.execute }
  const fastify = await register({ executor, cluster: { store: emptyStore(), instanceId: 'a', leaseTtl: 3000, onOrphan: 'resume' } })
  t.match(fastify.a2a.cluster?.options, { instanceId: 'a', leaseTtl: 3000, heartbeatInterval: 1000, sweepInterval: 1000, cancelTimeout: 3000, onOrphan: 'resume' })
})

t.test('with a cluster, no start-up recovery: a store with unfinished tasks is left to the failover sweep', async t => {
  let listed = false
  const taskStore = {
    create: async () => {},
    get: async () => undefined,
    update: async () => {},
    list: async () => ({ tasks: [], totalSize: 0, nextPageToken: '' }),
    listUnfinished: async () => { listed = true; return [] }
  }
  await register({ taskStore, cluster: { store: emptyStore() } })
  t.equal(listed, false)
  await register({ taskStore })
  t.equal(listed, true, 'without a cluster it runs')
})
