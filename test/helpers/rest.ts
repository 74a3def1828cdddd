// Small clients for the HTTP+JSON binding: one request, a stream read to its end, a
// stream held open, and the REST request a client builds for a JSON-RPC method.
import { parseSse, V1, type SseEvent } from './server.js'

export const A2A_JSON = 'application/a2a+json'
/** The Content-Type of every JSON answer of the binding (Fastify adds the charset). */
export const A2A_JSON_UTF8 = 'application/a2a+json; charset=utf-8'

export interface RestReply {
  status: number
  headers: Headers
  /** The parsed body, or undefined for an empty one. */
  body: any
  text: string
}

export interface RestOptions {
  /** An object is sent as JSON; a string as it is. */
  body?: unknown
  /** All the request's headers. Default: `A2A-Version: 1.0`, and a JSON Content-Type when there is a body. */
  headers?: Record<string, string>
}

function requestInit (method: string, options: RestOptions): RequestInit {
  const init: RequestInit = { method, headers: options.headers ?? V1 }
  if (options.body !== undefined) {
    init.body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    if (options.headers === undefined) init.headers = { ...V1, 'content-type': A2A_JSON }
  }
  return init
}

/** One request to `base + path`. */
export async function rest (base: string, method: string, path: string, options: RestOptions = {}): Promise<RestReply> {
  const response = await fetch(base + path, requestInit(method, options))
  const text = await response.text()
  const type = response.headers.get('content-type') ?? ''
  return { status: response.status, headers: response.headers, text, body: /json/.test(type) && text !== '' ? JSON.parse(text) : undefined }
}

/** A request that must succeed (200); returns its body. */
export async function restResult (base: string, method: string, path: string, options: RestOptions = {}): Promise<any> {
  const reply = await rest(base, method, path, options)
  if (reply.status !== 200) throw new Error(`${method} ${path} failed with ${reply.status}: ${reply.text}`)
  return reply.body
}

export interface RestStream {
  status: number
  contentType: string
  text: string
  /** The SSE events, when the answer is a stream. */
  events: SseEvent[]
  /** The error body, when the answer is not a stream. */
  body: any
}

/** A streaming request read to its end. */
export async function restStream (base: string, method: string, path: string, options: RestOptions = {}): Promise<RestStream> {
  const response = await fetch(base + path, requestInit(method, options))
  const text = await response.text()
  const contentType = response.headers.get('content-type') ?? ''
  const isStream = contentType.startsWith('text/event-stream')
  return { status: response.status, contentType, text, events: isStream ? parseSse(text) : [], body: isStream ? undefined : JSON.parse(text) }
}

export interface RestRequest {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  body?: Record<string, unknown>
}

const enc = encodeURIComponent

/** Each method's route; `{name}` is a path-bound field (spec §11.3). */
const restRoutes: Record<string, { method: RestRequest['method'], path: string }> = {
  SendMessage: { method: 'POST', path: '/message:send' },
  SendStreamingMessage: { method: 'POST', path: '/message:stream' },
  GetTask: { method: 'GET', path: '/tasks/{id}' },
  ListTasks: { method: 'GET', path: '/tasks' },
  CancelTask: { method: 'POST', path: '/tasks/{id}:cancel' },
  SubscribeToTask: { method: 'POST', path: '/tasks/{id}:subscribe' },
  CreateTaskPushNotificationConfig: { method: 'POST', path: '/tasks/{taskId}/pushNotificationConfigs' },
  ListTaskPushNotificationConfigs: { method: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs' },
  GetTaskPushNotificationConfig: { method: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs/{id}' },
  DeleteTaskPushNotificationConfig: { method: 'DELETE', path: '/tasks/{taskId}/pushNotificationConfigs/{id}' },
  GetExtendedAgentCard: { method: 'GET', path: '/extendedAgentCard' }
}

/**
 * The REST request for a JSON-RPC method and its params, as a client builds it: the
 * tenant and the path-bound fields in the path, the rest in the body (POST) or the query
 * string (GET, DELETE; scalars only, as spec §11.5 allows). A method the binding does not
 * define goes to `POST /<method>`, which is no route: the "not offered" case.
 */
export function restRequest (method: string, params: Record<string, unknown>): RestRequest {
  const route = restRoutes[method] ?? { method: 'POST', path: `/${method}` }
  const { tenant, ...fields } = params
  let path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = fields[name]
    delete fields[name]
    return enc(String(value ?? ''))
  })
  if (tenant !== undefined) path = `/${enc(String(tenant))}${path}`
  if (route.method === 'POST') return { method: route.method, path, body: fields }
  const query = Object.entries(fields).map(([name, value]) => `${enc(name)}=${enc(String(value))}`)
  return { method: route.method, path: query.length === 0 ? path : `${path}?${query.join('&')}` }
}
