// This project's server with the handler taken out of SendMessage: the same plugin,
// options and routes as servers/fastify-a2a.ts, but `sendMessage` answers at once with
// one completed task, made by the real handler at start and kept. What it serves is the
// cost of the bindings alone (parsing, validation, the interceptor chain, the call
// runner, serialisation, the writes), so that a run shows how much of the distance to a
// ceiling is the bindings' and how much the handler's (tasks, executor, store, events).
import { app, listen } from './fastify-a2a.js'
import type { StartedServer } from './common.js'

export async function start (): Promise<StartedServer> {
  const fastify = await app()
  const { handler } = fastify.a2a
  const answer = await handler.sendMessage(
    { message: { messageId: 'stub', role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
    { binding: 'bench', method: 'SendMessage', serviceParams: {}, tenant: '', extensions: [] }
  )
  handler.sendMessage = async () => answer
  return await listen(fastify)
}
