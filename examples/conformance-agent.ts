// `npm start`: serves the conformance agent on HOST:PORT (default 127.0.0.1:3000).
import Fastify, { type FastifyInstance } from 'fastify'
import { a2aWebSocket } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from './agent.js'

export interface AgentEnv {
  A2A_PUBLIC_URL?: string
  A2A_STORE?: string
}

export async function buildConformanceServer (env: AgentEnv = process.env): Promise<FastifyInstance> {
  const store = env.A2A_STORE ?? 'memory'
  if (store !== 'memory') throw new Error(`A2A_STORE=${store} is not supported yet: only "memory"`)
  const fastify = Fastify({ logger: { level: 'warn' } })
  await fastify.register(a2aWebSocket, {
    executor: conformanceAgent,
    card: conformanceCard,
    extendedCard: conformanceCard,
    publicUrl: env.A2A_PUBLIC_URL
  })
  return fastify
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
    // Streams that never end (a held task) must not keep the process up past the grace period.
    setTimeout(() => process.exit(0), 5000).unref()
    fastify.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
