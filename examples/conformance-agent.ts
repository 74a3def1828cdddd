// `npm start`: serves the conformance agent on HOST:PORT (default 127.0.0.1:3000).
import Fastify, { type FastifyInstance } from 'fastify'
import { a2aWebSocket, openPostgresStores, openSqliteStores, type PushConfigStore, type TaskStore, type WebSocketOptions } from '../lib/index.js'
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
  await fastify.register(a2aWebSocket, {
    executor: conformanceAgent,
    card: conformanceCard,
    // With a token every call needs it; the extended card then shows one more skill.
    auth: env.A2A_AUTH_TOKEN === undefined ? undefined : { bearer: { tokens: [env.A2A_AUTH_TOKEN] } },
    extendedCard: env.A2A_AUTH_TOKEN === undefined ? conformanceCard : { ...conformanceCard, skills: [...conformanceCard.skills, secretSkill] },
    rateLimit: env.A2A_RATE_LIMIT === undefined ? undefined : { max: Number(env.A2A_RATE_LIMIT), timeWindow: 60_000 },
    taskStore: stores?.taskStore,
    pushConfigStore: stores?.pushConfigStore,
    // Conformance suites run their webhook receivers on this machine.
    push: { allow: ['127.0.0.0/8', '::1', 'localhost'] },
    websocket: webSocketOptions(env),
    publicUrl: env.A2A_PUBLIC_URL,
    shutdown: SHUTDOWN
  })
  // The browser demo of fastify-a2a/client (examples/browser/), at /demo.
  await fastify.register(browserDemo)
  if (stores !== undefined) fastify.addHook('onClose', async () => { await stores.close() })
  return fastify
}

interface OpenedStores {
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
  close (): unknown
}

/**
 * `A2A_STORE`: `memory` (the plugin's default), `sqlite:<path>`, or a `postgres://` URL whose
 * optional `schema` query parameter names the schema (default `public`).
 */
async function openStores (spec: string): Promise<OpenedStores | undefined> {
  if (spec === 'memory') return undefined
  if (spec.startsWith('sqlite:')) return openSqliteStores({ path: spec.slice('sqlite:'.length) })
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const url = new URL(spec)
    const schema = url.searchParams.get('schema') ?? undefined
    url.searchParams.delete('schema')
    return await openPostgresStores({ connectionString: url.href, schema })
  }
  throw new Error(`A2A_STORE=${spec}: expected memory, sqlite:<path> or a postgres:// URL`)
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
