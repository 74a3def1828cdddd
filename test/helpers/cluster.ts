// Several instances of the conformance agent as child processes, one port each, sharing
// PostgreSQL (tasks, cluster tables) and a bus (Redis, or PostgreSQL LISTEN/NOTIFY): the
// agent's A2A_STORE and A2A_BUS. Each cluster has its own schema (the URLs' `schema`
// parameter) and its own prefix of bus channels and Redis rate-limit keys (A2A_BUS_PREFIX),
// so clusters of tests running in parallel never meet.
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { startAgentProcess, type AgentProcess } from './agent-process.js'
import { dropSchemas, requirePostgres } from './postgres.js'
import { requireRedis } from './redis.js'
import { wsUrl } from './ws.js'

export type ClusterAgent = AgentProcess & {
  wsUrl: string
  /** Signals the process (SIGKILL unless told) and resolves once it exited. */
  kill (signal?: NodeJS.Signals): Promise<void>
  /** The PostgreSQL URL and schema the cluster shares, for tests that look at the tables. */
  postgres: { url: string, schema: string }
}

export interface ClusterOptions {
  /** Default 2. */
  instances?: number
  /** More environment for every instance (e.g. A2A_LEASE_TTL_MS, A2A_RATE_LIMIT). */
  env?: Record<string, string>
  /** Default `redis`. */
  bus?: 'redis' | 'postgres'
}

/**
 * Starts the instances; `t`'s teardown kills them and drops the schema. Resolves with an
 * empty list, `t` then skipped, when PostgreSQL (or Redis, for a Redis bus) is missing.
 */
export async function startCluster (t: Test, options: ClusterOptions = {}): Promise<ClusterAgent[]> {
  const postgres = await requirePostgres(t)
  if (postgres === undefined) return []
  const bus = options.bus ?? 'redis'
  const redis = bus === 'redis' ? await requireRedis(t) : undefined
  if (bus === 'redis' && redis === undefined) return []

  const tag = randomBytes(4).toString('hex')
  const schema = `a2a_test_cluster_${process.pid}_${tag}`
  const storeUrl = new URL(postgres)
  storeUrl.searchParams.set('schema', schema)
  const store = storeUrl.href
  const env = {
    A2A_STORE: store,
    A2A_BUS: redis ?? store,
    A2A_BUS_PREFIX: `a2a_t${tag}_`,
    ...options.env
  }
  const agents: ClusterAgent[] = []
  t.teardown(async () => {
    await Promise.all(agents.map(agent => agent.kill()))
    await dropSchemas(postgres, [schema])
  })
  const started = await Promise.allSettled(Array.from({ length: options.instances ?? 2 }, () => startAgentProcess(env)))
  for (const result of started) {
    if (result.status === 'fulfilled') agents.push(clusterAgent(result.value, { url: postgres, schema }))
  }
  const failed = started.find(result => result.status === 'rejected')
  if (failed !== undefined) throw failed.reason
  return agents
}

function clusterAgent (agent: AgentProcess, postgres: ClusterAgent['postgres']): ClusterAgent {
  return {
    ...agent,
    wsUrl: wsUrl(agent.origin),
    postgres,
    async kill (signal = 'SIGKILL') {
      if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill(signal)
      await agent.exit
    }
  }
}
