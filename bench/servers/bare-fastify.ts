// The HTTP ceiling: a bare Fastify route that parses the same JSON request body and
// answers a small JSON body. No A2A work at all, so nothing an A2A server can beat.
// Beside it, the floor (`FLOOR_PATH`): the same route answering what a blocking
// SendMessage must answer, a completed task of the shape this project's server returns
// (new ids, a timestamp, the artifact, the history), built directly and serialised
// once. It is the cost of the answer alone, without validation, a task lifecycle, a
// store or an executor.
import Fastify from 'fastify'
import { FLOOR_PATH, startedOn, type StartedServer } from './common.js'

interface RpcBody {
  id: number
  params: { message: { messageId: string, role: string, parts: Array<{ text: string }> } }
}

export async function start (): Promise<StartedServer> {
  const fastify = Fastify()
  const answer = { jsonrpc: '2.0', id: 1, result: { ok: true } }
  fastify.post('/', async () => answer)

  let tasks = 0
  // As long as a UUID, and cheaper to make than any.
  const uniqueId = (prefix: string) => `${prefix}-0000-4000-8000-${(++tasks).toString(16).padStart(12, '0')}`
  fastify.post(FLOOR_PATH, async (request, reply) => {
    const { id, params: { message } } = request.body as RpcBody
    const taskId = uniqueId('00000000')
    const contextId = uniqueId('11111111')
    const task = {
      id: taskId,
      contextId,
      status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
      artifacts: [{ artifactId: 'echo', parts: [{ text: message.parts[0]?.text ?? '' }] }],
      history: [{ messageId: message.messageId, role: message.role, parts: message.parts, taskId, contextId }]
    }
    return await reply.type('application/json').send(JSON.stringify({ jsonrpc: '2.0', id, result: { task } }))
  })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  return startedOn(fastify.server)
}
