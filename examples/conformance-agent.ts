// `npm start`: serves the conformance agent on HOST:PORT (default 127.0.0.1:3000).
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import {
  a2aWebSocket, openPostgresStores, openSqliteStores, postgresBus, redisBus,
  type ClusterOptions, type ClusterStore, type EventBus, type PushConfigStore, type TaskStore, type WebSocketOptions
} from '../lib/index.js'
import { conformanceAgent, conformanceCard } from './agent.js'
import { browserDemo } from './browser/route.js'

export interface AgentEnv {
  A2A_PUBLIC_URL?: string
  A2A_STORE?: string
  A2A_ALLOWED_ORIGINS?: string
  A2A_REQUIRE_ORIGIN?: string
  A2A_MAX_CONNECTIONS?: string
  A2A_IDLE_TIMEOUT_MS?: string
  A2A_AUTH_TOKEN?: string
  A2A_RATE_LIMIT?: string
  A2A_BUS?: string
  A2A_BUS_PREFIX?: string
  A2A_LEASE_TTL_MS?: string
}

/** On SIGTERM: work in progress gets 2 s, then running tasks are cancelled and get 1 s more. */
const SHUTDOWN = { completionGrace: 2000, taskGrace: 1000 }
/** The graceful path takes at most completionGrace + 2 × taskGrace; past this the process gives up. */
const HARD_EXIT_MS = SHUTDOWN.completionGrace + 2 * SHUTDOWN.taskGrace + 2000

const secretSkill = { id: 'secret', name: 'Secret', description: 'Shown to authenticated callers only', tags: ['secret'] }

/** The WebSocket knobs of shared/sut-agent.md. */
function webSocketOptions (env: AgentEnv): WebSocketOptions {
  const options: WebSocketOptions = { requireOrigin: env.A2A_REQUIRE_ORIGIN === '1' }
  if (env.A2A_ALLOWED_ORIGINS !== undefined) options.allowedOrigins = env.A2A_ALLOWED_ORIGINS.split(',').map(origin => origin.trim()).filter(Boolean)
  if (env.A2A_MAX_CONNECTIONS !== undefined) options.maxConnections = Number(env.A2A_MAX_CONNECTIONS)
  if (env.A2A_IDLE_TIMEOUT_MS !== undefined) options.idleTimeout = Number(env.A2A_IDLE_TIMEOUT_MS)
  return options
}

export async function buildConformanceServer (env: AgentEnv = process.env): Promise<FastifyInstance> {
  const stores = await openStores(env.A2A_STORE ?? 'memory')
  const fastify = Fastify({ logger: { level: 'warn' } })
  const shared = openBus(env, (error) => fastify.log.warn({ err: error }, 'redis connection error'))
  await fastify.register(a2aWebSocket, {
    executor: conformanceAgent,
    card: conformanceCard,
    // With a token every call needs it; the extended card then shows one more skill.
    auth: env.A2A_AUTH_TOKEN === undefined ? undefined : { bearer: { tokens: [env.A2A_AUTH_TOKEN] } },
    extendedCard: env.A2A_AUTH_TOKEN === undefined ? conformanceCard : { ...conformanceCard, skills: [...conformanceCard.skills, secretSkill] },
    rateLimit: env.A2A_RATE_LIMIT === undefined ? undefined : { max: Number(env.A2A_RATE_LIMIT), timeWindow: 60_000, redis: shared?.counters },
    taskStore: stores?.taskStore,
    pushConfigStore: stores?.pushConfigStore,
    bus: shared?.bus,
    cluster: clusterOptions(env, stores, shared),
    // Conformance suites run their webhook receivers on this machine.
    push: { allow: ['127.0.0.0/8', '::1', 'localhost'] },
    websocket: webSocketOptions(env),
    publicUrl: env.A2A_PUBLIC_URL,
    shutdown: SHUTDOWN
  })
  // The browser demo of fastify-a2a/client (examples/browser/), at /demo.
  await fastify.register(browserDemo)
  if (stores !== undefined) fastify.addHook('onClose', async () => { await stores.close() })
  if (shared?.counters !== undefined) fastify.addHook('onClose', async () => { await shared.counters?.quit() })
  return fastify
}

interface SharedBus {
  bus: EventBus
  /** With a Redis bus, rate-limit counters live in the same Redis, so a caller's budget is one across instances. */
  counters?: Redis
}

/**
 * `A2A_BUS`: a `redis://` URL, or a `postgres://` URL (LISTEN/NOTIFY; its optional `schema`
 * query parameter names the schema of the overflow table). `A2A_BUS_PREFIX` prefixes the
 * channels (and the Redis rate-limit keys), so several clusters can share one server.
 */
function openBus (env: AgentEnv, onError: (error: Error) => void): SharedBus | undefined {
  const spec = env.A2A_BUS
  if (spec === undefined || spec === '') return undefined
  const prefix = env.A2A_BUS_PREFIX
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
    const counters = env.A2A_RATE_LIMIT === undefined ? undefined : new Redis(spec, { keyPrefix: prefix })
    counters?.on('error', onError)
    return { bus: redisBus({ url: spec, channelPrefix: prefix === undefined ? undefined : `${prefix}events:`, onError }), counters }
  }
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const { connectionString, schema } = splitSchema('A2A_BUS', spec)
    return { bus: postgresBus({ connectionString, schema, channelPrefix: prefix }) }
  }
  throw new Error(`A2A_BUS=${withoutPassword(spec)}: expected a redis:// or postgres:// URL`)
}

/**
 * The URL for an error message, its password (if any) replaced by `***`: the message reaches
 * stderr and the logs. Unparsable, everything from the `:` after the user name to the last `@`
 * goes, which hides more than a parser would call the password, never less.
 */
function withoutPassword (spec: string): string {
  if (!URL.canParse(spec)) return spec.replace(/^([^:/?#]+:\/\/[^:/?#@]*):.*@/s, '$1:***@')
  const url = new URL(spec)
  if (url.password === '') return spec
  url.password = '***'
  return url.href
}

/** A `postgres://` URL without its `schema` query parameter, and that parameter. */
function splitSchema (variable: string, spec: string): { connectionString: string, schema?: string } {
  // Not URL's own error: it carries the input whole, password included.
  if (!URL.canParse(spec)) throw new Error(`${variable}=${withoutPassword(spec)}: not a valid URL`)
  const url = new URL(spec)
  const schema = url.searchParams.get('schema') ?? undefined
  url.searchParams.delete('schema')
  return { connectionString: url.href, schema }
}

interface OpenedStores {
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
  clusterStore?: ClusterStore
  close (): unknown
}

/** PostgreSQL tasks and a bus across instances make a cluster; `A2A_LEASE_TTL_MS` bounds failover. */
function clusterOptions (env: AgentEnv, stores: OpenedStores | undefined, shared: SharedBus | undefined): ClusterOptions | undefined {
  if (stores?.clusterStore === undefined || shared === undefined) return undefined
  return { store: stores.clusterStore, leaseTtl: env.A2A_LEASE_TTL_MS === undefined ? undefined : Number(env.A2A_LEASE_TTL_MS) }
}

/**
 * `A2A_STORE`: `memory` (the plugin's default), `sqlite:<path>`, or a `postgres://` URL whose
 * optional `schema` query parameter names the schema (default `public`).
 */
async function openStores (spec: string): Promise<OpenedStores | undefined> {
  if (spec === 'memory') return undefined
  if (spec.startsWith('sqlite:')) return openSqliteStores({ path: spec.slice('sqlite:'.length) })
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) return await openPostgresStores(splitSchema('A2A_STORE', spec))
  throw new Error(`A2A_STORE=${withoutPassword(spec)}: expected memory, sqlite:<path> or a postgres:// URL`)
}

async function main (): Promise<void> {
  const host = process.env.HOST ?? '127.0.0.1'
  const port = Number(process.env.PORT ?? 3000)
  const fastify = await buildConformanceServer()
  await fastify.listen({ host, port })
  const address = fastify.server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  process.stdout.write(`listening on http://${host}:${bound}\n`)

  let closing = false
  const shutdown = () => {
    if (closing) return
    closing = true
    // The fallback, should the graceful path hang (it is bounded): not a clean exit.
    setTimeout(() => {
      process.stderr.write(`shutdown did not finish within ${HARD_EXIT_MS} ms\n`)
      process.exit(1)
    }, HARD_EXIT_MS).unref()
    fastify.close().then(() => {
      // One line on stderr: stdout carries only the listening line.
      process.stderr.write(`shutdown ${JSON.stringify(fastify.a2a.lastShutdownReport)}\n`)
      process.exit(0)
    }, () => process.exit(1))
  }
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
