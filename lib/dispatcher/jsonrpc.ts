// The JSON-RPC binding (spec §9): POST at the plugin's root path, one JSON-RPC request
// per body, SSE for the two streaming methods.
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { InternalError, UnsupportedMediaTypeError, errorHeaders, errorTable, toA2AError, toRefusal, type A2AError } from '../errors/index.js'
import { HttpCallContext, PLAIN_JSON, acceptedBody, httpRequestedVersion, readBodiesAsText, sendHttpAnswer, type HttpDispatcherOptions } from './call.js'
import { failure, failureObject, parseEnvelope, successOf, type JsonRpcId } from './rpc.js'
import { coalesceReplies } from './coalesce.js'
import { sendSse } from './sse.js'

export const JSONRPC_BINDING = 'JSONRPC'

/**
 * Logs what the client is not shown: the cause of an internal error (a request's or the
 * instance's logger). What the server means to answer is no failure: a refusal (4xx, or an
 * Unavailable with no cause behind it: shutdown, a connection limit) is not logged, and a
 * stream whose reader fell behind is a warning, once per stream.
 */
export function logInternal (source: { log: FastifyBaseLogger }, error: A2AError): void {
  const { row } = error
  if (row.httpStatus < 500 || (row === errorTable.Unavailable && error.cause === undefined)) return
  if (row === errorTable.StreamLagged) source.log.warn({ droppedEvents: error.metadata?.droppedEvents }, 'A2A stream ended: its reader fell behind')
  else source.log.error({ err: error.cause ?? error }, 'A2A call failed')
}

/** HTTP statuses a JSON-RPC error keeps: refusals before the call is served. Any other error is a 200. */
const REFUSAL_STATUSES = new Set([401, 403, 413, 415, 429])

function sendError (request: FastifyRequest, reply: FastifyReply, id: JsonRpcId, error: A2AError): void {
  logInternal(request, error)
  const status = REFUSAL_STATUSES.has(error.row.httpStatus) ? error.row.httpStatus : 200
  reply.code(status).headers(errorHeaders(error)).type('application/json').send(failure(id, error))
}

export async function jsonRpcDispatcher (fastify: FastifyInstance, options: HttpDispatcherOptions): Promise<void> {
  const { runner } = options

  // The body is parsed once, here, so that bad JSON is a JSON-RPC error and not Fastify's.
  readBodiesAsText(fastify, options.bodyLimit)

  // What reaches it was raised before the call (a hook, the body) or is already an A2A error (sendHttpAnswer).
  fastify.setErrorHandler((error, request, reply) => {
    sendError(request, reply, null, toRefusal(error, reply, options.bodyLimit))
  })
  if (options.coalesceReplies) coalesceReplies(fastify, failure(null, new InternalError()), PLAIN_JSON)

  /** Answers one request; resolves to nothing (sendHttpAnswer). */
  const serve = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const body = typeof request.body === 'string' ? request.body : ''
    const contentType = request.headers['content-type']
    if (!acceptedBody(contentType, body)) {
      sendError(request, reply, null, new UnsupportedMediaTypeError(contentType ?? '(none)'))
      return
    }
    const envelope = parseEnvelope(body, options.maxJsonDepth)
    if (!envelope.ok) {
      if (envelope.notification) reply.code(204).send()
      else sendError(request, reply, envelope.id, envelope.error)
      return
    }
    const { id, method, params } = envelope.request
    const notification = !Object.hasOwn(envelope.request, 'id')
    const replyId: JsonRpcId = id ?? null
    const context = new HttpCallContext(JSONRPC_BINDING, method.name, request)
    // A streaming method's only answer is its stream: as a notification it is not run.
    if (notification && method.kind === 'stream') {
      reply.code(204).send()
      return
    }
    try {
      const result = await runner.run(method, params, httpRequestedVersion(request), context, request)
      if (context.extensions.length > 0) reply.header('a2a-extensions', context.extensions.join(', '))
      if (notification) {
        if (result.kind === 'stream') await result.events.return?.()
        reply.code(204).send()
        return
      }
      if (result.kind === 'unary') {
        reply.type('application/json').send(successOf(replyId, method.serialize(result.value)))
        return
      }
      // Errors before the first event are plain JSON-RPC responses (sendSse reads it first).
      await sendSse(reply, result.events, {
        event: (event) => successOf(replyId, method.serialize(event)),
        error: (error) => JSON.stringify(failureObject(replyId, error)),
        failed: (error) => logInternal(request, error),
        keepAlive: options.sseKeepAlive
      })
    } catch (error) {
      if (notification) {
        logInternal(request, toA2AError(error))
        reply.code(204).send()
        return
      }
      sendError(request, reply, replyId, toA2AError(error))
    }
  }

  fastify.post('/', (request, reply) => sendHttpAnswer(serve(request, reply), reply))
}
