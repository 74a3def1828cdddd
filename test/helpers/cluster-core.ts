// Instances of one cluster inside the test process: each a Fastify app with its own
// PostgreSQL pool and Redis connections, sharing a fresh schema and channel prefix, with
// short leases so failover takes about a second. `cutOff` makes an instance die as far as
// the others can tell: its connections close and its executions stop writing.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Test } from 'tap'
import {
  ORPHAN_MESSAGE, openPostgresStores, redisBus, type A2APluginOptions, type ClusterMember, type ClusterOptions, type ClusterStore, type EventBus,
  type PostgresStores, type TaskStore
} from '../../lib/index.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './postgres.js'
import { requireRedis } from './redis.js'
import { startServer, type TestServer } from './server.js'

export const LEASE_TTL = 1000

export interface Instance extends TestServer {
  member: ClusterMember
  stores: PostgresStores
  /** Dies, as far as the other instances can tell. */
  cutOff (): Promise<void>
}

export interface InstanceOptions {
  /** Plugin options of this instance (executor, push, …); `cluster` is merged with the defaults here. */
  options?: Partial<A2APluginOptions>
  cluster?: Partial<ClusterOptions>
  /** Wraps the cluster store, to hold up or fail some of its calls. */
  wrapStore?: (store: ClusterStore) => ClusterStore
  /** Wraps the task store, likewise. */
  wrapTaskStore?: (store: TaskStore) => TaskStore
  /** Wraps the instance's bus, likewise (the instance closes the bus it wraps). */
  wrapBus?: (bus: EventBus) => EventBus
}

export interface TestCluster {
  start (options?: InstanceOptions): Promise<Instance>
  /** Rows of one of the cluster's tables (`a2a_task_leases`, `a2a_push_outbox`, …) matching `where`. */
  rows (table: string, where?: string, values?: unknown[]): Promise<any[]>
  /** The owners of the task's lease rows. */
  leases (taskId: string): Promise<string[]>
}

/** The store, with some of its methods replaced (`this` stays the store in the others; its own fields are copied). */
export function overrideStore<Store extends object> (store: Store, overrides: Partial<Store>): Store {
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(store)).filter(name => name !== 'constructor')
  const wrapper = Object.fromEntries(methods.map(name => [name, (store as any)[name].bind(store)]))
  return Object.assign(wrapper, store, overrides) as Store
}

/** A cluster for `t`, torn down with it; undefined (t skipped) without PostgreSQL or Redis. */
export async function testCluster (t: Test): Promise<TestCluster | undefined> {
  const url = await requirePostgres(t)
  if (url === undefined) return undefined
  const redisUrl = await requireRedis(t)
  if (redisUrl === undefined) return undefined
  const schema = uniqueSchema('cluster_core')
  const channelPrefix = `a2a:test:${randomBytes(4).toString('hex')}:`
  const instances: Instance[] = []
  t.teardown(async () => {
    for (const instance of instances) await instance.close().catch(() => {})
    await dropSchemas(url, [schema])
  })
  const pool = new pg.Pool({ connectionString: url })
  t.teardown(() => pool.end())
  const rows = async (table: string, where = 'true', values: unknown[] = []) =>
    (await pool.query(`SELECT * FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)} WHERE ${where}`, values)).rows
  return {
    rows,
    leases: async (taskId) => (await rows('a2a_task_leases', 'task_id = $1', [taskId])).map(row => row.owner),
    async start ({
      options = {}, cluster = {}, wrapStore = (store: ClusterStore) => store, wrapTaskStore = (store: TaskStore) => store, wrapBus = (bus: EventBus) => bus
    }: InstanceOptions = {}) {
      const stores = await openPostgresStores({ connectionString: url, schema })
      const bus = redisBus({ url: redisUrl, channelPrefix })
      const server = await startServer({
        taskStore: wrapTaskStore(stores.taskStore),
        pushConfigStore: stores.pushConfigStore,
        bus: wrapBus(bus),
        // A test instance that is cut off cannot write its tasks' end: no need to wait for it.
        shutdown: { completionGrace: 50, taskGrace: 50 },
        ...options,
        cluster: { store: wrapStore(stores.clusterStore), leaseTtl: LEASE_TTL, ...cluster }
      })
      let storesClosed: Promise<void> | undefined
      const closeStores = () => (storesClosed ??= stores.close())
      let alive = true
      const instance: Instance = {
        ...server,
        stores,
        member: server.fastify.a2a.cluster as ClusterMember,
        async close () {
          await server.close()
          await closeStores()
          await bus.close()
        },
        async cutOff () {
          if (!alive) return
          alive = false
          server.fastify.a2a.handler.loseExecutions()
          await Promise.all([closeStores(), bus.close()])
        }
      }
      instances.push(instance)
      return instance
    }
  }
}

/**
 * The webhook bodies of a task whose instance died with the task's first delivery in flight
 * and its WORKING update recorded behind it: that delivery, again from the taker, WORKING,
 * then FAILED. Returns the FAILED update's status.
 */
export function checkTakenOver (t: Test, bodies: any[], taskId: string): any {
  const [inFlight, again, working, failed] = bodies
  t.equal(bodies.length, 4)
  t.equal(inFlight.task.id, taskId)
  t.same(again, inFlight, 'the delivery in flight, sent again by the taker')
  t.equal(working.statusUpdate.status.state, 'TASK_STATE_WORKING')
  t.equal(failed.statusUpdate.status.state, 'TASK_STATE_FAILED')
  t.same(failed.statusUpdate.status.message.parts, [{ text: ORPHAN_MESSAGE }])
  return failed.statusUpdate.status
}
