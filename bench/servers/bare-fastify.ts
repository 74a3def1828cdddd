// The HTTP ceiling: a bare Fastify route that parses the same JSON request body and
// answers a small JSON body. No A2A work at all, so nothing an A2A server can beat.
import Fastify from 'fastify'
import type { StartedServer } from './common.js'

export async function start (): Promise<StartedServer> {
  const fastify = Fastify()
  const answer = { jsonrpc: '2.0', id: 1, result: { ok: true } }
  fastify.post('/', async () => answer)
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  const address = fastify.server.address()
  return { port: typeof address === 'object' && address !== null ? address.port : 0 }
}
