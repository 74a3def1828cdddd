// One A2A call, whatever the binding: the method table, params validated by the
// compiled schemas, the version and extension checks, then the handler. Every
// dispatcher goes through `CallRunner.run`, so each binding checks the same things in
// the same order: method (-32601), the interceptor chain, the capability the method needs
// (-32003 push, -32004 streaming and the extended card), params (-32602), version (-32009),
// extensions (-32008).
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ExtensionSupportRequiredError, JsonParseError, UnsupportedMediaTypeError, UnsupportedOperationError, VersionNotSupportedError,
  invalidParams, shuttingDown, toA2AError
} from '../errors/index.js'
import { requestOrigin } from './card.js'
import type { CallContext } from '../handler/executor.js'
import type { Logger, RequestHandler } from '../handler/request-handler.js'
import type { A2AInterceptor, CallOutcome, InterceptedCall } from '../interceptors/types.js'
import { requestedExtensions, requestedVersion, serviceParamFromHeaders, serviceParamsFromHeaders, type ServiceParams } from '../service-params.js'
import * as requests from '../schema/requests.js'
import { compile, type Validator } from '../schema/validate.js'
import { compileSerializer, serializeStreamResponse } from '../schema/serialize.js'
import { isKey, KEY_CHARACTERS, KEY_MAX_LENGTH, SendMessageResponse, Task, type AgentCapabilities, type StreamResponse } from '../schema/wire.js'

export type MethodKind = 'unary' | 'stream'

export interface MethodSpec {
  name: string
  kind: MethodKind
  /** The card capability the method needs: without it the call is refused before its params are read. */
  needs?: Capability
  validate: Validator<unknown>
  /** `request`: the call's HTTP request (over WebSocket, the upgrade's), when it has one. */
  invoke (handler: RequestHandler, params: any, context: CallContext, request?: FastifyRequest): Promise<unknown>
  /** The JSON of a unary result, or of a stream's event. */
  serialize (result: unknown): string
}

// Tasks, messages and events are written as their schemas have them: unknown fields are
// ignored (spec §5.7). Push configs and cards keep JSON.stringify's.
const serializeTask = compileSerializer(Task)

type Capability = Parameters<RequestHandler['requireCapability']>[0]

function method<P> (
  name: string, kind: MethodKind, validate: Validator<P>, invoke: (handler: RequestHandler, params: P, context: CallContext, request?: FastifyRequest) => Promise<unknown>,
  serialize: (result: unknown) => string = JSON.stringify, needs?: Capability
): MethodSpec {
  return { name, kind, needs, validate, invoke, serialize: kind === 'stream' ? serializeStreamResponse : serialize }
}

/** The eleven v1.0 methods (spec §3), by their JSON-RPC names. */
export const methods: ReadonlyMap<string, MethodSpec> = new Map([
  method('SendMessage', 'unary', compile(requests.SendMessageRequest), (h, p, c) => h.sendMessage(p, c), compileSerializer(SendMessageResponse)),
  method('SendStreamingMessage', 'stream', compile(requests.SendMessageRequest), (h, p, c) => h.sendStreamingMessage(p, c), undefined, 'streaming'),
  method('GetTask', 'unary', compile(requests.GetTaskRequest), (h, p, c) => h.getTask(p, c), serializeTask),
  method('ListTasks', 'unary', compile(requests.ListTasksRequest), (h, p, c) => h.listTasks(p, c), compileSerializer(requests.ListTasksResponse)),
  method('CancelTask', 'unary', compile(requests.CancelTaskRequest), (h, p, c) => h.cancelTask(p, c), serializeTask),
  method('SubscribeToTask', 'stream', compile(requests.SubscribeToTaskRequest), (h, p, c) => h.subscribeToTask(p, c), undefined, 'streaming'),
  method('CreateTaskPushNotificationConfig', 'unary', compile(requests.CreateTaskPushNotificationConfigRequest), (h, p, c) => h.createTaskPushNotificationConfig(p, c), undefined, 'pushNotifications'),
  method('GetTaskPushNotificationConfig', 'unary', compile(requests.GetTaskPushNotificationConfigRequest), (h, p, c) => h.getTaskPushNotificationConfig(p, c), undefined, 'pushNotifications'),
  method('ListTaskPushNotificationConfigs', 'unary', compile(requests.ListTaskPushNotificationConfigsRequest), (h, p, c) => h.listTaskPushNotificationConfigs(p, c), undefined, 'pushNotifications'),
  method('DeleteTaskPushNotificationConfig', 'unary', compile(requests.DeleteTaskPushNotificationConfigRequest), (h, p, c) => h.deleteTaskPushNotificationConfig(p, c), undefined, 'pushNotifications'),
  method('GetExtendedAgentCard', 'unary', compile(requests.GetExtendedAgentCardRequest), (h, p, c, r) => h.getExtendedAgentCard(p, c, originOf(r)), undefined, 'extendedAgentCard')
].map(spec => [spec.name, spec]))

/** Where the client reached the server; none for a request made without a socket (`injectWS`), which has no host to tell. */
function originOf (request: FastifyRequest | undefined): string | undefined {
  return request?.socket === undefined ? undefined : requestOrigin(request)
}

const SUPPORTED_VERSION = /^1\.0(\.\d+)?$/

/**
 * Throws VersionNotSupported unless `version` (the requested A2A-Version, undefined when
 * absent) is served. A missing version means 0.3 (spec §3.6.2) unless `allowMissing`.
 */
export function checkVersion (version: string | undefined, allowMissing: boolean): void {
  if (version === undefined) {
    if (allowMissing) return
    throw new VersionNotSupportedError('0.3 (no A2A-Version was sent)').with({ metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } })
  }
  if (!SUPPORTED_VERSION.test(version)) {
    throw new VersionNotSupportedError(version).with({ metadata: { requestedVersion: version, supportedVersions: '1.0' } })
  }
}

/**
 * The context of a call made by an HTTP request: its headers as service parameters, plus
 * `:path`. The service parameters are made on first read (most calls never read them: the
 * version and the extensions are read from the headers alone), then kept.
 */
export class HttpCallContext implements CallContext {
  readonly binding: string
  readonly method: string
  tenant: string
  identity?: unknown = undefined
  scopes?: string[] = undefined
  extensions: string[]
  // The header lines and the URL, not the request: a context may outlive its request.
  readonly #rawHeaders: readonly string[]
  readonly #url: string
  #serviceParams: ServiceParams | undefined = undefined

  constructor (binding: string, method: string, request: FastifyRequest) {
    this.binding = binding
    this.method = method
    this.tenant = ''
    this.#rawHeaders = request.raw.rawHeaders
    this.#url = request.url
    this.extensions = requestedExtensions(serviceParamFromHeaders(this.#rawHeaders, 'a2a-extensions'))
  }

  get serviceParams (): ServiceParams {
    if (this.#serviceParams === undefined) {
      const params = serviceParamsFromHeaders(this.#rawHeaders)
      params[':path'] = this.#url.split('?')[0] as string
      this.#serviceParams = params
    }
    return this.#serviceParams
  }

  set serviceParams (params: ServiceParams) {
    this.#serviceParams = params
  }
}

/** The A2A-Version an HTTP request asks for, by header or query parameter (undefined when absent). */
export function httpRequestedVersion (request: FastifyRequest): string | undefined {
  return requestedVersion(serviceParamFromHeaders(request.raw.rawHeaders, 'a2a-version'), request.query)
}

/** The HTTP+JSON binding's media type (v1.0.1); v1.0.0, and the JSON-RPC binding, use application/json. */
export const A2A_JSON = 'application/a2a+json'
export const PLAIN_JSON = 'application/json'

/**
 * Is a body of this Content-Type one to read? Either JSON media type, in UTF-8 (the only
 * charset application/a2a+json allows, spec §14.1); no Content-Type only with no body. Any
 * other is refused (spec §13: reject unexpected media types): a form or `text/plain` body is
 * what another site's page may POST without a CORS preflight.
 */
export function acceptedBody (contentType: string | undefined, text: string): boolean {
  if (contentType === PLAIN_JSON || contentType === A2A_JSON) return true
  if (contentType === undefined) return text === ''
  const [type = '', ...parameters] = contentType.split(';').map(part => part.trim().toLowerCase())
  if (type !== A2A_JSON && type !== PLAIN_JSON) return false
  return parameters.every(parameter => !parameter.startsWith('charset=') || parameter.replace(/"/g, '') === 'charset=utf-8')
}

/**
 * Every body of the binding is read as text, whatever its media type, for the binding to
 * parse. The JSON media types are registered by name beside the catch-all: Fastify keeps
 * the parser it found for a Content-Type header only when one is registered under that
 * type, and for the catch-all parses the header again at every request.
 */
export function readBodiesAsText (fastify: FastifyInstance, bodyLimit: number): void {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'buffer', bodyLimit }, decodeBody)
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, decodeBody)
}

/**
 * A body's text. Read as bytes: decoded as a string, bytes that are not UTF-8 would become
 * U+FFFD unseen (two ids would become one), where a WebSocket closes with 1007. A body of a
 * media type the binding refuses is left to that refusal (415).
 */
function decodeBody (request: FastifyRequest, body: Buffer, done: (error: Error | null, body?: string) => void): void {
  const coding = request.headers['content-encoding']
  if (coding !== undefined && coding.toLowerCase() !== 'identity') {
    const refusal = new UnsupportedMediaTypeError()
    refusal.message = `Unsupported content coding ${coding}: send the body without a Content-Encoding`
    done(refusal)
  } else if (!isUtf8(body) && acceptedBody(request.headers['content-type'], 'a body')) {
    const refusal = new JsonParseError()
    refusal.message = 'Invalid JSON payload: the body is not UTF-8'
    done(refusal)
  } else {
    done(null, body.toString())
  }
}

/**
 * Hands an HTTP call to Fastify from a handler that is not async. An async handler that
 * sends its answer must resolve to the reply, a thenable, and Fastify then waits for the
 * response's end with listeners it puts on the response (Reply.then): for every request
 * whose answer waits for the end of the turn (coalesce.ts). `answering` sends the answer
 * and resolves to nothing; what it throws goes to the binding's error handler as an A2A
 * error, so that handler reads a 4xx `statusCode` as a refusal only in errors raised before
 * the call (toRefusal), not in an executor's or an interceptor's.
 */
export function sendHttpAnswer (answering: Promise<void>, reply: FastifyReply): void {
  // A block: returned, the reply would be adopted as the catch's result, through Reply.then again.
  answering.catch((error: unknown) => { reply.send(toA2AError(error)) })
}

/** The options of the two HTTP bindings' dispatchers (JSON-RPC and HTTP+JSON). */
export interface HttpDispatcherOptions {
  runner: CallRunner
  bodyLimit: number
  /** Arrays and objects nested in a body, checked before it is parsed. */
  maxJsonDepth: number
  /** Write the answers of one turn of the event loop together (coalesce.ts). */
  coalesceReplies: boolean
  /** ms of silence after which an SSE stream gets a `: keep-alive` comment; 0, never (sse.ts). */
  sseKeepAlive: number
}

export interface CallRunnerOptions {
  handler: RequestHandler
  capabilities: AgentCapabilities
  /** Treat a request without A2A-Version as 1.0 instead of 0.3. */
  allowMissingVersion: boolean
  /** Read at every call, so interceptors added after registration take part. */
  interceptors: readonly A2AInterceptor[]
  logger: Logger
}

export type CallResult = { kind: 'unary', value: unknown } | { kind: 'stream', events: AsyncIterableIterator<StreamResponse> }

/**
 * The stream as the dispatcher reads it, reporting how it ended, once: its last event
 * read, an error, or the reader leaving (`return`). What the queue buffers stays visible.
 */
function observeEnd (events: AsyncIterableIterator<StreamResponse>, complete: (outcome: CallOutcome) => void): AsyncIterableIterator<StreamResponse> {
  let done = false
  const end = (outcome: CallOutcome) => {
    if (done) return
    done = true
    complete(outcome)
  }
  const release = () => events.return?.() ?? Promise.resolve({ value: undefined, done: true as const })
  const observed: AsyncIterableIterator<StreamResponse> & { readonly buffered?: number } = {
    get buffered () { return (events as { buffered?: number }).buffered },
    async next () {
      try {
        const next = await events.next()
        if (next.done === true) end({ status: 'succeeded' })
        return next
      } catch (error) {
        end({ status: 'failed', error: toA2AError(error) })
        throw error
      }
    },
    async return () {
      end({ status: 'cancelled' })
      return await release()
    },
    /** The dispatcher ends the stream with `error` (its reader fell behind): a failure, not the reader leaving. */
    async throw (error: unknown) {
      end({ status: 'failed', error: toA2AError(error) })
      return await release()
    },
    [Symbol.asyncIterator] () { return observed }
  }
  return observed
}

const TENANT_REFUSED = `must be at most ${KEY_MAX_LENGTH} characters and ${KEY_CHARACTERS.replace('must ', '')}`

export class CallRunner {
  readonly #options: CallRunnerOptions
  readonly #supported: Set<string>
  readonly #required: string[]
  #inFlight = 0
  #refusing = false

  constructor (options: CallRunnerOptions) {
    this.#options = options
    const extensions = options.capabilities.extensions ?? []
    this.#supported = new Set(extensions.flatMap(e => e.uri === undefined ? [] : [e.uri]))
    this.#required = extensions.flatMap(e => e.required === true && e.uri !== undefined ? [e.uri] : [])
  }

  /**
   * Runs the interceptor chain, validates `params` and runs the call. `context.extensions`
   * holds the requested extensions on entry and the activated ones on return;
   * `context.tenant` is set to the tenant `params` name before the chain, and is the call's
   * tenant as the chain leaves it. `version` is the requested A2A-Version (undefined when
   * absent). Every interceptor's `onComplete` runs exactly once: when a unary call settles,
   * or when a stream ends, fails or is left.
   */
  async run (spec: MethodSpec, params: unknown, version: string | undefined, context: CallContext, request?: FastifyRequest): Promise<CallResult> {
    const call: InterceptedCall = { params, request }
    this.#inFlight++
    try {
      if (this.#refusing) throw shuttingDown()
      // The tenant the params name (REST merges its path's into them), read before the chain:
      // every interceptor sees it on every binding, and what the chain leaves is the call's
      // tenant. One the schema refuses is left out; the params' check refuses the call.
      const named = (params as { tenant?: unknown } | null | undefined)?.tenant
      if (typeof named === 'string' && isKey(named)) context.tenant = named
      for (const interceptor of this.#options.interceptors) await interceptor.before?.(context, call)
      if (spec.needs !== undefined) this.#options.handler.requireCapability(spec.needs)
      const checked = spec.validate.check(call.params ?? {})
      if (!checked.ok) throw invalidParams(checked.violations)
      checkVersion(version, this.#options.allowMissingVersion)
      context.extensions = this.#activate(context.extensions)
      // A tenant an interceptor set (a header's, a resolver's) has met no schema: it is checked as the request's field is.
      if (context.tenant !== '' && !isKey(context.tenant)) throw invalidParams([{ field: 'tenant', description: TENANT_REFUSED }])
      if (context.tenant !== '' && !this.#options.handler.isolatesTenants) {
        throw new UnsupportedOperationError(`tenant "${context.tenant}": this server's stores cannot keep tenants apart`)
      }
      const value = await spec.invoke(this.#options.handler, checked.value, context, request)
      if (spec.kind === 'unary') {
        this.#complete(context, call, { status: 'succeeded' })
        return { kind: 'unary', value }
      }
      return { kind: 'stream', events: observeEnd(value as AsyncIterableIterator<StreamResponse>, (outcome) => this.#complete(context, call, outcome)) }
    } catch (error) {
      // Nothing above completes the call and then throws: this is its only completion.
      this.#complete(context, call, { status: 'failed', error: toA2AError(error) })
      throw error
    }
  }

  /** Calls in progress on every binding; a stream counts until it ends, fails or is left. */
  get inFlight (): number {
    return this.#inFlight
  }

  /** Shutdown: from now on every call is refused with Unavailable (-32603, HTTP 503). */
  refuseNewCalls (): void {
    this.#refusing = true
  }

  /** A call's completion: every interceptor's onComplete, errors logged, never thrown. Once per call (see observeEnd). */
  #complete (context: CallContext, call: InterceptedCall, outcome: CallOutcome): void {
    this.#inFlight--
    for (const interceptor of this.#options.interceptors) {
      if (interceptor.onComplete === undefined) continue
      Promise.resolve()
        .then(() => interceptor.onComplete?.(context, outcome, call))
        .catch((error: unknown) => this.#options.logger.error({ err: error }, 'interceptor onComplete failed'))
    }
  }

  #activate (requested: string[]): string[] {
    if (requested.length === 0 && this.#required.length === 0) return requested
    const activated = requested.filter(uri => this.#supported.has(uri))
    for (const uri of this.#required) {
      if (!activated.includes(uri)) throw new ExtensionSupportRequiredError(uri).with({ metadata: { extension: uri } })
    }
    return activated
  }
}
