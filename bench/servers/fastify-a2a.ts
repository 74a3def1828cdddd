// This project: the plugin with its defaults (memory stores, no logger) serving the
// conformance agent of examples/agent.ts, the same agent the tests run.
import Fastify from 'fastify'
import { a2aWebSocket } from '../../lib/index.js'
import { conformanceAgent, conformanceCard } from '../../examples/agent.js'
import type { StartedServer } from './common.js'

export async function start (): Promise<StartedServer> {
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  const address = fastify.server.address()
  return { port: typeof address === 'object' && address !== null ? address.port : 0 }
}
