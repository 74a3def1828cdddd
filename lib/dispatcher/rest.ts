// The HTTP+JSON binding (spec §11): one route per operation, each also under an optional
// /{tenant} prefix. The path-bound fields are merged over the JSON body (POST) or the
// query string (GET, DELETE), and the call goes through the same CallRunner as JSON-RPC.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TObject } from 'typebox'
import {
  InternalError, MethodNotFoundError, UnsupportedMediaTypeError, errorHeaders, invalidParams,
  toRefusal, toRestError, type A2AError
} from '../errors/index.js'
import { merged } from '../copy.js'
import * as requests from '../schema/requests.js'
import { A2A_JSON, HttpCallContext, PLAIN_JSON, acceptedBody, httpRequestedVersion, methods, readBodiesAsText, sendHttpAnswer, type HttpDispatcherOptions, type MethodSpec } from './call.js'
import { coalesceReplies } from './coalesce.js'
import { parseJson } from '../json-guard.js'
import { logInternal } from './jsonrpc.js'
import { queryDecoder, type Query, type QueryDecoder } from './rest-query.js'
import { sendSse } from './sse.js'
import { etagMatches, etagOf } from './card.js'

export const REST_BINDING = 'HTTP+JSON'

type HttpMethod = 'GET' | 'POST' | 'DELETE'

interface RestRoute {
  method: HttpMethod
  /**
   * find-my-way syntax: `::` is a literal colon. `:id(.+)` makes the parameter a regex one,
   * which the router tries before the plain `/tasks/:id`, so that `:cancel` and `:subscribe`
   * are not read as part of a task id.
   */
  url: string
  operation: string
  /** The request's schema for a route without a body: its fields come from the query string. */
  query?: TObject
  /** A stream has no HEAD: it would hold a subscription and send its headers only at the end. */
  streams?: true
}

const routes: RestRoute[] = [
  { method: 'POST', url: '/message::send', operation: 'SendMessage' },
  { method: 'POST', url: '/message::stream', operation: 'SendStreamingMessage' },
  { method: 'GET', url: '/tasks/:id', operation: 'GetTask', query: requests.GetTaskRequest },
  { method: 'GET', url: '/tasks', operation: 'ListTasks', query: requests.ListTasksRequest },
  { method: 'POST', url: '/tasks/:id(.+)::cancel', operation: 'CancelTask' },
  // The proto binds GET, the spec's prose POST: both are served (digest §14 #1).
  { method: 'GET', url: '/tasks/:id(.+)::subscribe', operation: 'SubscribeToTask', query: requests.SubscribeToTaskRequest, streams: true },
  { method: 'POST', url: '/tasks/:id(.+)::subscribe', operation: 'SubscribeToTask' },
  { method: 'POST', url: '/tasks/:taskId/pushNotificationConfigs', operation: 'CreateTaskPushNotificationConfig' },
  { method: 'GET', url: '/tasks/:taskId/pushNotificationConfigs', operation: 'ListTaskPushNotificationConfigs', query: requests.ListTaskPushNotificationConfigsRequest },
  { method: 'GET', url: '/tasks/:taskId/pushNotificationConfigs/:id', operation: 'GetTaskPushNotificationConfig', query: requests.GetTaskPushNotificationConfigRequest },
  { method: 'DELETE', url: '/tasks/:taskId/pushNotificationConfigs/:id', operation: 'DeleteTaskPushNotificationConfig', query: requests.DeleteTaskPushNotificationConfigRequest },
  { method: 'GET', url: '/extendedAgentCard', operation: 'GetExtendedAgentCard', query: requests.GetExtendedAgentCardRequest }
]

const TENANT_PREFIX = '/:tenant'

/** The paths of the binding's routes (each also under /{tenant}), for their CORS preflights. */
export const REST_PATHS: readonly string[] = [...new Set(routes.flatMap(route => [route.url, TENANT_PREFIX + route.url]))]

/**
 * Without a plugin prefix these are the paths the binding owns (each also under /{tenant}):
 * an unknown route among them gets the A2A 404 body, any other path the application's own 404.
 */
const ROOT_SURFACE = ['/message::*', '/tasks', '/tasks/*', '/extendedAgentCard', '/extendedAgentCard/*']
const SURFACE_METHODS = ['DELETE', 'GET', 'PATCH', 'POST', 'PUT']

/** q of the most specific range of `accept` that matches `type` (0 when none does). */
function quality (accept: string, type: string): number {
  let specificity = -1
  let q = 0
  for (const range of accept.split(',')) {
    const [name = '', ...parameters] = range.split(';').map(part => part.trim().toLowerCase())
    const rank = name === type ? 2 : name === 'application/*' ? 1 : name === '*/*' ? 0 : -1
    if (rank <= specificity) continue
    specificity = rank
    const weight = parameters.find(parameter => parameter.startsWith('q='))
    q = weight === undefined ? 1 : Number(weight.slice(2)) || 0
  }
  return q
}

/** application/a2a+json, unless the client's Accept prefers application/json. */
function responseType (accept: string | undefined): string {
  if (accept === undefined) return A2A_JSON
  return quality(accept, PLAIN_JSON) > quality(accept, A2A_JSON) ? PLAIN_JSON : A2A_JSON
}

/** The JSON object of a POST body; an empty body is `{}` (subscribe and cancel may send none). */
function readBody (request: FastifyRequest, maxJsonDepth: number): Record<string, unknown> {
  const text = typeof request.body === 'string' ? request.body : ''
  const contentType = request.headers['content-type']
  if (!acceptedBody(contentType, text)) throw new UnsupportedMediaTypeError(contentType ?? '(none)')
  if (text === '') return {}
  const parsed = parseJson(text, maxJsonDepth)
  if (!parsed.ok) throw parsed.error
  const { value } = parsed
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidParams([{ field: '', description: 'the request body must be a JSON object' }])
  }
  return value as Record<string, unknown>
}

/**
 * The extended card may differ per caller (spec §9.4): a cache may keep it for that caller
 * alone, and must ask again before each reuse, which a matching ETag answers with 304.
 */
function sendExtendedCard (request: FastifyRequest, reply: FastifyReply, body: string): void {
  const etag = etagOf(body)
  reply.header('etag', etag).header('cache-control', 'private, no-cache')
  if (etagMatches(request.headers['if-none-match'], etag)) reply.code(304).send()
  else reply.type(responseType(request.headers.accept)).send(body)
}

function sendError (request: FastifyRequest, reply: FastifyReply, error: A2AError): void {
  logInternal(request, error)
  reply.code(error.row.httpStatus).headers(errorHeaders(error)).type(responseType(request.headers.accept)).send(JSON.stringify(toRestError(error)))
}

export async function restDispatcher (fastify: FastifyInstance, options: HttpDispatcherOptions): Promise<void> {
  const { runner } = options

  // The body is read as text and parsed by the route, so that an unknown route is a 404
  // whatever its body, and bad JSON or another media type is the binding's error.
  readBodiesAsText(fastify, options.bodyLimit)

  // What reaches it was raised before the call (a hook, the body) or is already an A2A error (sendHttpAnswer).
  fastify.setErrorHandler((error, request, reply) => sendError(request, reply, toRefusal(error, reply, options.bodyLimit)))
  if (options.coalesceReplies) coalesceReplies(fastify, JSON.stringify(toRestError(new InternalError())), A2A_JSON)

  /** Answers one request; resolves to nothing (sendHttpAnswer). */
  const call = async (spec: MethodSpec, decode: QueryDecoder | undefined, request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const path = request.params as Record<string, string>
    // The path wins over a repeated body or query field (spec §11, transcoding).
    const params = merged(decode === undefined ? readBody(request, options.maxJsonDepth) : decode(request.query as Query), path)
    // The path's tenant is in `params`: the runner reads it from there, as it does every binding's.
    const context = new HttpCallContext(REST_BINDING, spec.name, request)
    const result = await runner.run(spec, params, httpRequestedVersion(request), context, request)
    if (context.extensions.length > 0) reply.header('a2a-extensions', context.extensions.join(', '))
    if (result.kind === 'unary') {
      if (spec.name === 'GetExtendedAgentCard') sendExtendedCard(request, reply, spec.serialize(result.value))
      else reply.type(responseType(request.headers.accept)).send(spec.serialize(result.value))
      return
    }
    // Errors before the first event are plain error responses (sendSse reads it first).
    await sendSse(reply, result.events, {
      event: (event) => spec.serialize(event),
      error: (error) => JSON.stringify(toRestError(error)),
      failed: (error) => logInternal(request, error),
      keepAlive: options.sseKeepAlive
    })
  }

  for (const route of routes) {
    const spec = methods.get(route.operation) as MethodSpec
    const decode = route.query === undefined ? undefined : queryDecoder(route.query)
    for (const prefix of ['', TENANT_PREFIX]) {
      fastify.route({
        method: route.method,
        url: prefix + route.url,
        exposeHeadRoute: route.streams !== true,
        handler: (request, reply) => sendHttpAnswer(call(spec, decode, request, reply), reply)
      })
    }
  }

  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    sendError(request, reply, new MethodNotFoundError(`${request.method} ${request.url.split('?')[0]}`))
  // Under a prefix the whole prefix is the A2A surface. At the root a not-found handler
  // would take over the application's 404 (and clash with its own setNotFoundHandler),
  // so only the binding's own paths are caught there.
  if (fastify.prefix !== '') {
    fastify.setNotFoundHandler(notFound)
    return
  }
  for (const path of ROOT_SURFACE) {
    const served: string[] = routes.filter(route => route.url === path).map(route => route.method)
    const unserved = SURFACE_METHODS.filter(method => !served.includes(method))
    for (const prefix of ['', TENANT_PREFIX]) fastify.route({ method: unserved, url: prefix + path, handler: notFound })
  }
}
