// The HTTP+JSON binding over fetch (spec §11): each method on its route, under
// `/{tenant}` when the params name one; path fields out of the body, a GET's fields in
// the query string; SSE of bare StreamResponses for the two streams.
import type { StreamResponse } from '../../schema/wire.js'
import { deadline, type Deadline } from '../deadline.js'
import { errorFromRest, parseBody } from '../errors.js'
import { timeoutOption } from '../options.js'
import { maxEventSizeOption } from '../sse.js'
import { streamEvent, type CallOptions, type StreamMethod, type Transport, type UnaryMethod } from '../transport.js'
import { fetcher, readText, requestHeaders, send, sseStream, type Fetch, type HttpTransportOptions } from './http.js'

export const REST_BINDING = 'HTTP+JSON'

const A2A_JSON = 'application/a2a+json'

type Params = Record<string, unknown>

interface Route {
  verb: 'GET' | 'POST' | 'DELETE'
  /** The path (tenant excluded) and the params left for the body or the query. */
  path (params: Params): [string, Params]
}

/**
 * A param as a path segment. A URL resolves `.` and `..` away, even percent-encoded: the
 * request would reach another path (`/./tasks` is the default tenant's `/tasks`), so they
 * fail the call (the server refuses them as keys on every binding).
 */
function segment (name: string, value: unknown): string {
  const text = String(value)
  if (text === '.' || text === '..') throw new TypeError(`${name} "${text}" cannot be a path segment over HTTP+JSON`)
  return encodeURIComponent(text)
}

/** `path` with the named params taken out of `params`, given as path segments. */
function bind (params: Params, names: string[], path: (segments: string[]) => string): [string, Params] {
  const rest = { ...params }
  for (const name of names) delete rest[name]
  return [path(names.map(name => segment(name, params[name]))), rest]
}

const routes: Record<UnaryMethod | StreamMethod, Route> = {
  SendMessage: { verb: 'POST', path: (p) => ['/message:send', p] },
  SendStreamingMessage: { verb: 'POST', path: (p) => ['/message:stream', p] },
  GetTask: { verb: 'GET', path: (p) => bind(p, ['id'], ([id]) => `/tasks/${id}`) },
  ListTasks: { verb: 'GET', path: (p) => ['/tasks', p] },
  CancelTask: { verb: 'POST', path: (p) => bind(p, ['id'], ([id]) => `/tasks/${id}:cancel`) },
  SubscribeToTask: { verb: 'GET', path: (p) => bind(p, ['id'], ([id]) => `/tasks/${id}:subscribe`) },
  CreateTaskPushNotificationConfig: { verb: 'POST', path: (p) => bind(p, ['taskId'], ([taskId]) => `/tasks/${taskId}/pushNotificationConfigs`) },
  GetTaskPushNotificationConfig: { verb: 'GET', path: (p) => bind(p, ['taskId', 'id'], ([taskId, id]) => `/tasks/${taskId}/pushNotificationConfigs/${id}`) },
  ListTaskPushNotificationConfigs: { verb: 'GET', path: (p) => bind(p, ['taskId'], ([taskId]) => `/tasks/${taskId}/pushNotificationConfigs`) },
  DeleteTaskPushNotificationConfig: { verb: 'DELETE', path: (p) => bind(p, ['taskId', 'id'], ([taskId, id]) => `/tasks/${taskId}/pushNotificationConfigs/${id}`) },
  GetExtendedAgentCard: { verb: 'GET', path: (p) => ['/extendedAgentCard', p] }
}

function query (params: Params): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue
    for (const item of Array.isArray(value) ? value : [value]) search.append(name, String(item))
  }
  const text = search.toString()
  return text === '' ? '' : `?${text}`
}

async function failure (response: Response, call: Deadline): Promise<never> {
  throw errorFromRest(response.status, parseBody(await readText(response, call)), response.headers.get('www-authenticate') ?? undefined)
}

export class RestTransport implements Transport {
  readonly binding = REST_BINDING
  readonly url: string
  readonly #options: HttpTransportOptions
  readonly #fetch: Fetch
  readonly #maxEventSize: number

  constructor (options: HttpTransportOptions) {
    this.#options = options
    this.url = options.url.replace(/\/+$/, '')
    this.#fetch = fetcher(options)
    this.#maxEventSize = maxEventSizeOption(options.maxEventSize)
    timeoutOption('timeout', options.timeout)
  }

  async call (method: UnaryMethod, params: object, options: CallOptions = {}): Promise<unknown> {
    const call = deadline(options, this.#options.timeout)
    try {
      const response = await this.#send(method, params, options, A2A_JSON, call)
      if (!response.ok) await failure(response, call)
      return parseBody(await readText(response, call))
    } finally {
      call.dispose()
    }
  }

  stream (method: StreamMethod, params: object, options: CallOptions = {}): AsyncIterableIterator<StreamResponse> {
    return sseStream({
      open: (call) => this.#send(method, params, options, `text/event-stream, ${A2A_JSON}`, call),
      decode: (event) => {
        const body = JSON.parse(event.data) as unknown
        // The stream's status is 200 already: the error body's own code is the status it stands for.
        if (event.event === 'error') throw errorFromRest((body as { error?: { code?: number } }).error?.code ?? 500, body)
        return streamEvent(body)
      },
      refused: failure,
      maxEventSize: this.#maxEventSize
    }, options)
  }

  async close (): Promise<void> {}

  // Async so that a param no path can carry fails the call (a stream: from its iterator).
  async #send (method: UnaryMethod | StreamMethod, params: object, options: CallOptions, accept: string, call: Deadline): Promise<Response> {
    const { tenant, ...fields } = params as Params
    const route = routes[method]
    const [path, rest] = route.path(fields)
    const base = typeof tenant === 'string' && tenant !== '' ? `${this.url}/${segment('tenant', tenant)}` : this.url
    const hasBody = route.verb === 'POST'
    return await send(this.#fetch, base + path + (hasBody ? '' : query(rest)), {
      method: route.verb,
      headers: requestHeaders(this.#options, options, hasBody ? { 'content-type': A2A_JSON, accept } : { accept }),
      body: hasBody ? JSON.stringify(rest) : undefined
    }, call)
  }
}
