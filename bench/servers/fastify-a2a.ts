// This project: the plugin with its defaults (memory stores, no logger) serving the
// conformance agent of examples/agent.ts, the same agent the tests run.
import Fastify, { type FastifyInstance } from 'fastify'
import { a2aWebSocket } from '../../lib/index.js'
import { conformanceAgent, conformanceCard } from '../../examples/agent.js'
import { startedOn, type StartedServer } from './common.js'

/** The server, ready and not yet listening. */
export async function app (): Promise<FastifyInstance> {
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await fastify.ready()
  return fastify
}

export async function listen (fastify: FastifyInstance): Promise<StartedServer> {
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  return startedOn(fastify.server)
}

export async function start (): Promise<StartedServer> {
  return await listen(await app())
}
