// Plugin options: normalised and checked once, at registration. A bad option fails
// `register` with an error naming it.
import { randomUUID } from 'node:crypto'
import { isIPv4 } from 'node:net'
import { types } from 'node:util'
import createError from '@fastify/error'
import { UnsecuredJWT } from 'jose'
import type { EventBus } from './bus/types.js'
import { CLUSTER_DEFAULTS, type ClusterOptions, type NormalizedClusterOptions } from './cluster/types.js'
import type { FastifyCorsOptions } from '@fastify/cors'
import type { CardSigningOptions } from './card/signing.js'
import type { AuthOptions } from './interceptors/auth.js'
import { DEFAULT_CACHE_SIZE, DEFAULT_STORE_TIMEOUT, type RateLimitOptions, type RateLimitStore } from './interceptors/rate-limit.js'
import type { TenancyOptions } from './interceptors/tenancy.js'
import type { A2AInterceptor } from './interceptors/types.js'
import type { AgentExecutor, CallContext } from './handler/executor.js'
import type { DialectLimits } from './dispatcher/websocket-connection.js'
import { DEFAULT_BUS_READY_TIMEOUT, DEFAULT_EXECUTOR_TIMEOUT, DEFAULT_FINAL_STATE_RETRY } from './handler/request-handler.js'
import { DEFAULT_MAX_JSON_DEPTH } from './json-guard.js'
import { PUSH_DEFAULTS, type NormalizedPushOptions, type PushOptions } from './push/sender.js'
import { WebhookGuard } from './push/ssrf.js'
import { compile, type Validator } from './schema/validate.js'
import { AgentCardInput } from './schema/wire.js'
import type { PushConfigStore, TaskStore } from './store/types.js'

export const InvalidOptionError = createError('A2A_ERR_INVALID_OPTION', 'Invalid option %s: %s', 500, TypeError)
/** One agent per Fastify instance (or context): its routes, its `a2a` decorator and its card are the instance's. */
export const AlreadyRegisteredError = createError('A2A_ERR_ALREADY_REGISTERED',
  'fastify-a2a is already registered on this instance: one agent per instance (register another in a context with a prefix of its own)', 500)

export type ExtendedCardProvider = (context: CallContext) => AgentCardInput | Promise<AgentCardInput>

export interface WebSocketOptions {
  /** Origins a browser may open a WebSocket from (`scheme://host[:port]` or `null`), compared whole ignoring ASCII case. Default: any. */
  allowedOrigins?: string[]
  /** Refuse an upgrade that carries no Origin (every non-browser client sends none). Default false. */
  requireOrigin?: boolean
  /** Largest incoming message in bytes; a larger one ends the connection with close code 1009. Default 4 MiB. */
  maxMessageSize?: number
  /** Requests in progress at once on one connection; a stream counts until it ends. Default 64. */
  maxInFlight?: number
  /** Bytes a connection may have buffered before a stream on it ends with STREAM_LAGGED. Default 8 MiB. */
  maxBufferedBytes?: number
  /**
   * Disconnect a peer that does not complete its upgrade (or first request) within this many ms of connecting, a TLS
   * handshake included; 0 = never. Every connection of the server, the application's own routes' too. Default 10,000.
   */
  handshakeTimeout?: number
  /** WebSocket connections held at once; past it an upgrade is refused with 503. Default: no cap. */
  maxConnections?: number
  /**
   * Close with 1001 a connection without an application message for this many ms while no request is in progress,
   * pongs or not; a peer silent half that long is pinged, so a dead one holding a request is closed too. Default 0 (never).
   */
  idleTimeout?: number
  /** The older name of `shutdown.completionGrace`, still accepted. */
  closeGrace?: number
  /** The a2a.v1 dialect, for clients that offer that subprotocol (README, *WebSocket dialect a2a.v1*). */
  a2aV1?: WebSocketA2aV1Options
}

/** The a2a.v1 WebSocket dialect (seed 001); the origin checks and `maxConnections` above apply to it too. */
export interface WebSocketA2aV1Options {
  /** Serve the dialect on the WebSocket route, listed in the card as `protocolBinding: "WEBSOCKET"`. Default true. */
  enabled?: boolean
  /**
   * Refuse with 401/403 before the 101 an upgrade whose credential the built-in `auth` refuses. Default true.
   * `auth.refuseAtUpgrade` refuses the upgrades of both dialects whatever this says.
   */
  refuseAtUpgrade?: boolean
  /** Largest incoming message in bytes; a larger one closes the connection with 1009. Default 1 MiB. */
  maxMessageSize?: number
  /** Requests in progress at once on one connection (a stream counts until it ends); past it -32000 "Too many concurrent streams". Default 128. */
  maxStreams?: number
  /** Connections held at once by one identity authenticated at the upgrade; past it 503 at the upgrade. Default 256. */
  maxConnectionsPerIdentity?: number
  /** Ping a peer silent for this many ms; 0 = never. Default 30,000. */
  pingInterval?: number
  /** Close with 1001 a pinged peer still silent after this many ms. Default 10,000. */
  pongTimeout?: number
  /** Close with 1001 a connection without an application message for this many ms while no request is in progress; 0 = never. Default 300,000. */
  idleTimeout?: number
  /**
   * Messages per window, per connection and per identity; past it -32000 "Rate limit exceeded" and close 1008. `false`: none.
   * Default 1,000 per 1,000 ms (a burst of the client's `maxPending`, 128 calls and their cancels, fits), in memory, counting 5,000 connections and identities at once (`cacheSize`; past it the one counted
   * least recently is forgotten and its budget starts over).
   */
  rateLimit?: false | { max?: number, timeWindow?: number, store?: RateLimitStore, cacheSize?: number }
}

export interface NormalizedA2aV1Options extends DialectLimits {
  refuseAtUpgrade: boolean
  maxConnectionsPerIdentity: number
}

/** What `fastify.close()` does with work in progress (README, *Hardening*). */
export interface ShutdownOptions {
  /** How long calls and executions in progress may finish by themselves, in ms. Default 5,000. */
  completionGrace?: number
  /** Then each execution still running is cancelled (its signal aborted) and may write its final state this long, in ms. Default 2,000. */
  taskGrace?: number
}

export interface NormalizedShutdownOptions {
  completionGrace: number
  taskGrace: number
}

export interface NormalizedWebSocketOptions {
  allowedOrigins?: string[]
  requireOrigin: boolean
  maxMessageSize: number
  maxInFlight: number
  maxBufferedBytes: number
  handshakeTimeout: number
  maxConnections?: number
  idleTimeout: number
  /** Undefined when the a2a.v1 dialect is not served. */
  a2aV1?: NormalizedA2aV1Options
}

export interface A2APluginOptions {
  /** The agent. */
  executor: AgentExecutor
  /** The public agent card; its `supportedInterfaces` are the bindings the plugin serves, then any the card gives. */
  card: AgentCardInput
  /**
   * Absolute base URL clients reach this server at, e.g. `https://agent.example.com`.
   * Default: the scheme and Host of each card request. Required with `signing`.
   */
  publicUrl?: string
  /** Path the A2A routes are mounted under, e.g. `/a2a`. The card stays at the host root. Default `''`. */
  prefix?: string
  /** The extended agent card, or a function of the caller that returns it. */
  extendedCard?: AgentCardInput | ExtendedCardProvider
  /** Default: an in-memory store (terminal tasks kept 1 h, at most 10,000 tasks). */
  taskStore?: TaskStore
  /** Default: an in-memory store. */
  pushConfigStore?: PushConfigStore
  /** Default: an in-memory bus. */
  bus?: EventBus
  /** Largest request body, in bytes. Default 4 MiB. */
  bodyLimit?: number
  /** Treat a request without A2A-Version as 1.0 instead of 0.3. Default false. */
  allowMissingVersion?: boolean
  /**
   * Write the JSON-RPC and HTTP+JSON answers of the requests read in one turn of the event loop
   * together, once that turn's reads are done (setImmediate), rather than each between two
   * reads. Default true; false writes each answer as soon as it is ready.
   */
  coalesceReplies?: boolean
  /** Events a stream buffers for a slow reader before it ends with STREAM_LAGGED. Default 1024. */
  maxQueuedEvents?: number
  /**
   * An SSE stream with nothing to send for this many ms gets a comment line (`: keep-alive`):
   * proxies that cut idle responses keep it, and a client that vanished is found by the write
   * failing. 0 sends none. Default 15,000.
   */
  sseKeepAlive?: number
  /** Arrays and objects nested in a request (any binding), checked before it is parsed; deeper is -32600 / HTTP 400. Default 64. */
  maxJsonDepth?: number
  /** An execution still running after this many ms is aborted and its task FAILED. Default 3,600,000 (1 hour). */
  executorTimeout?: number
  /**
   * How long SubscribeToTask (and, with `cluster`, a resent message) waits for the bus to follow
   * the task (its subscription acknowledged by Redis or PostgreSQL), in ms; past it the call is
   * refused with -32603 Unavailable. Default 5,000.
   */
  busReadyTimeout?: number
  /**
   * When the store fails to write the final state an execution leaves its task in (FAILED,
   * CANCELED), how long it is tried again, with backoff, in ms; then the task is left as stored
   * and an error logged. 0 tries once. Default 300,000 (5 minutes).
   */
  finalStateRetry?: number
  /** Graceful shutdown on `fastify.close()`. */
  shutdown?: ShutdownOptions
  /** Cache-Control max-age of the agent card, in seconds. Default 300. */
  cardMaxAge?: number
  /**
   * Accept message parts whose `mediaType` the card does not declare (defaultInputModes
   * and the skills' inputModes). Default false: such a part is refused with -32005.
   */
  allowUndeclaredInputModes?: boolean
  /** Run around every call on every binding, every WebSocket frame included, in order, after the built-in ones. */
  interceptors?: A2AInterceptor[]
  /** The WebSocket binding's limits and handshake checks. */
  websocket?: WebSocketOptions
  /**
   * Push-notification delivery (webhook timeouts, retries, queue bound, SSRF allow-list,
   * metrics). The sender runs exactly when `card.capabilities.pushNotifications` is true;
   * this option without that capability is an error. Defaults: see PushOptions.
   */
  push?: PushOptions
  /**
   * At start-up, mark FAILED, with a status message, every task the store holds in SUBMITTED
   * or WORKING: the process that ran it died. Stores with `listUnfinished` (SQLite,
   * PostgreSQL) take part. Set false when several processes share one store. Default true
   * without `cluster`; with it, failover recovers tasks by lease and this must not be true.
   */
  recoverTasks?: boolean
  /**
   * Several instances behind a balancer act as one agent (README, *Several instances*): leases and
   * failover, CancelTask across instances, push delivery through a durable outbox, SendMessage
   * deduplicated by messageId. Needs a `bus` across instances. Default: off (one instance).
   */
  cluster?: ClusterOptions
  /** Authentication on every call (the public card stays public); the card's security schemes follow from it. Default: none. */
  auth?: AuthOptions
  /** Calls per caller per window, on every binding and WebSocket frame. Default: no limit. */
  rateLimit?: RateLimitOptions
  /** Where a call's tenant comes from besides the REST path and the request's `tenant`. */
  tenancy?: TenancyOptions
  /** CORS for the A2A routes and the card (through @fastify/cors); `true` allows any origin. Default: off. */
  cors?: boolean | FastifyCorsOptions
  /**
   * Sign the served card with a JWS (ES256, or Ed25519 as EdDSA or Ed25519) over its RFC 8785 form under the presence
   * rules of spec §8.4; signed once at registration, so a key that does not fit `alg` fails it. Needs `publicUrl`. Default: unsigned.
   */
  signing?: CardSigningOptions
}

export interface NormalizedOptions {
  executor: AgentExecutor
  card: AgentCardInput
  publicUrl?: string
  prefix: string
  extendedCard?: ExtendedCardProvider
  taskStore?: TaskStore
  pushConfigStore?: PushConfigStore
  bus?: EventBus
  bodyLimit: number
  allowMissingVersion: boolean
  coalesceReplies: boolean
  maxQueuedEvents: number
  sseKeepAlive: number
  maxJsonDepth: number
  executorTimeout: number
  busReadyTimeout: number
  finalStateRetry: number
  shutdown: NormalizedShutdownOptions
  cardMaxAge: number
  allowUndeclaredInputModes: boolean
  interceptors: A2AInterceptor[]
  websocket: NormalizedWebSocketOptions
  /** Set exactly when the card declares push notifications. */
  push?: NormalizedPushOptions
  recoverTasks: boolean
  cluster?: NormalizedClusterOptions
  auth?: AuthOptions
  rateLimit?: RateLimitOptions
  tenancy?: TenancyOptions
  cors?: FastifyCorsOptions
  signing?: CardSigningOptions
}

const compiledCard = compile(AgentCardInput)

/** Card fields of v0.3 that v1.0 removed ("do not emit"), with what took their place. */
const REMOVED_CARD_FIELDS: ReadonlyArray<[path: string, instead: string]> = [
  ['url', 'supportedInterfaces[].url'],
  ['preferredTransport', 'the order of supportedInterfaces'],
  ['additionalInterfaces', 'supportedInterfaces'],
  ['protocolVersion', 'supportedInterfaces[].protocolVersion'],
  ['supportsAuthenticatedExtendedCard', 'capabilities.extendedAgentCard'],
  ['supportsExtendedAgentCard', 'capabilities.extendedAgentCard'],
  ['capabilities.stateTransitionHistory', 'nothing (v1.0 has no such capability)']
]

function fieldAt (value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((object, key) => (object as Record<string, unknown>)[key], value)
}

/** The card schema, and no field v1.0 removed: a card is served as given, so it would be emitted. */
export const validateCard: Validator<AgentCardInput> = {
  check (card) {
    const checked = compiledCard.check(card)
    if (!checked.ok) return checked
    for (const [path, instead] of REMOVED_CARD_FIELDS) {
      if (fieldAt(checked.value, path) !== undefined) return { ok: false, violations: [{ field: path, description: `was removed in A2A v1.0; use ${instead}` }] }
    }
    return checked
  }
}

function checkCard (name: string, card: unknown): AgentCardInput {
  const checked = validateCard.check(card)
  if (!checked.ok) {
    const [first] = checked.violations
    throw new InvalidOptionError(first?.field === '' ? name : `${name}.${first?.field}`, first?.description)
  }
  return checked.value
}

function integer (name: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new InvalidOptionError(name, `must be an integer >= ${min}`)
  return value
}

/** setTimeout's largest delay: a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1

function timerMs (name: string, value: unknown, fallback: number, min: number): number {
  const ms = integer(name, value, fallback, min)
  if (ms > MAX_TIMER_MS) throw new InvalidOptionError(name, `must be at most ${MAX_TIMER_MS} ms`)
  return ms
}

/** RFC 9110 token: what a header name may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

function object (name: string, value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidOptionError(name, 'must be an object')
}

/** An optional group of options: absent is `{}`; anything but an object (`null` too) is refused. */
function group<T extends object> (name: string, value: T | undefined): T {
  if (value === undefined) return {} as T
  object(name, value)
  return value
}

function optionalFunction (name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'function') throw new InvalidOptionError(name, 'must be a function')
}

function httpUrl (name: string, value: unknown): URL {
  let url: URL | undefined
  try { url = new URL(value as string) } catch {}
  if (typeof value !== 'string' || url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new InvalidOptionError(name, 'must be an absolute http or https URL')
  }
  return url
}

/** 127.0.0.0/8, ::1 or localhost, as the URL parser writes a host (an IPv4 address always dotted-decimal). */
function isLoopback (url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '[::1]' || (isIPv4(url.hostname) && url.hostname.startsWith('127.'))
}

function hasMethods (value: unknown, names: string[]): boolean {
  return typeof value === 'object' && value !== null && names.every(name => typeof (value as Record<string, unknown>)[name] === 'function')
}

/**
 * An Origin header a browser can send, lowercased: `null`, or scheme://host[:port] as the URL
 * parser writes it (no path, no default port, an IDN host in punycode). The header is compared
 * whole, so anything else (`*`, a wildcard host, a trailing `/`) would never match. Not
 * `URL.origin`: it is `null` for schemes such as `chrome-extension:`, whose pages do send their own.
 */
function isOrigin (origin: string): boolean {
  const lower = origin.toLowerCase()
  if (lower === 'null') return true
  let url: URL
  try { url = new URL(lower) } catch { return false }
  return url.host !== '' && !url.host.includes('*') && `${url.protocol}//${url.host}` === lower
}

function webSocketOptions (options: WebSocketOptions): NormalizedWebSocketOptions {
  const { allowedOrigins } = options
  if (allowedOrigins !== undefined && (!Array.isArray(allowedOrigins) || !allowedOrigins.every(origin => typeof origin === 'string'))) {
    throw new InvalidOptionError('websocket.allowedOrigins', 'must be an array of origins')
  }
  allowedOrigins?.forEach((origin, index) => {
    if (!isOrigin(origin)) throw new InvalidOptionError(`websocket.allowedOrigins[${index}]`, 'must be an origin, scheme://host[:port], or null')
  })
  if (options.requireOrigin !== undefined && typeof options.requireOrigin !== 'boolean') throw new InvalidOptionError('websocket.requireOrigin', 'must be a boolean')
  return {
    allowedOrigins,
    requireOrigin: options.requireOrigin ?? false,
    maxMessageSize: integer('websocket.maxMessageSize', options.maxMessageSize, 4 * 1024 * 1024),
    maxInFlight: integer('websocket.maxInFlight', options.maxInFlight, 64),
    maxBufferedBytes: integer('websocket.maxBufferedBytes', options.maxBufferedBytes, 8 * 1024 * 1024),
    handshakeTimeout: timerMs('websocket.handshakeTimeout', options.handshakeTimeout, 10_000, 0),
    maxConnections: options.maxConnections === undefined ? undefined : integer('websocket.maxConnections', options.maxConnections, 0),
    idleTimeout: timerMs('websocket.idleTimeout', options.idleTimeout, 0, 0),
    a2aV1: a2aV1Options(group('websocket.a2aV1', options.a2aV1))
  }
}

function a2aV1Options (options: WebSocketA2aV1Options): NormalizedA2aV1Options | undefined {
  if (!flag('websocket.a2aV1.enabled', options.enabled, true)) return undefined
  const { rateLimit } = options
  if (rateLimit !== undefined && rateLimit !== false && (typeof rateLimit !== 'object' || rateLimit === null)) {
    throw new InvalidOptionError('websocket.a2aV1.rateLimit', 'must be false or { max?, timeWindow?, store?, cacheSize? }')
  }
  if (rateLimit !== undefined && rateLimit !== false && rateLimit.store !== undefined) {
    if (!hasMethods(rateLimit.store, ['incr'])) throw new InvalidOptionError('websocket.a2aV1.rateLimit.store', 'must implement incr(key, callback, timeWindow, max)')
    if (rateLimit.cacheSize !== undefined) throw new InvalidOptionError('websocket.a2aV1.rateLimit.cacheSize', 'is for the in-memory store: not with store')
  }
  return {
    refuseAtUpgrade: flag('websocket.a2aV1.refuseAtUpgrade', options.refuseAtUpgrade, true),
    maxMessageSize: integer('websocket.a2aV1.maxMessageSize', options.maxMessageSize, 1024 * 1024),
    maxInFlight: integer('websocket.a2aV1.maxStreams', options.maxStreams, 128),
    maxConnectionsPerIdentity: integer('websocket.a2aV1.maxConnectionsPerIdentity', options.maxConnectionsPerIdentity, 256),
    pingInterval: timerMs('websocket.a2aV1.pingInterval', options.pingInterval, 30_000, 0),
    pongTimeout: timerMs('websocket.a2aV1.pongTimeout', options.pongTimeout, 10_000, 1),
    idleTimeout: timerMs('websocket.a2aV1.idleTimeout', options.idleTimeout, 300_000, 0),
    messageRate: rateLimit === false
      ? undefined
      : {
          max: integer('websocket.a2aV1.rateLimit.max', rateLimit?.max, 1000),
          timeWindow: timerMs('websocket.a2aV1.rateLimit.timeWindow', rateLimit?.timeWindow, 1000, 1),
          store: rateLimit?.store,
          cacheSize: integer('websocket.a2aV1.rateLimit.cacheSize', rateLimit?.cacheSize, DEFAULT_CACHE_SIZE)
        }
  }
}

function shutdownOptions (options: ShutdownOptions, closeGrace: unknown): NormalizedShutdownOptions {
  const alias = closeGrace === undefined ? undefined : timerMs('websocket.closeGrace', closeGrace, 0, 0)
  const completionGrace = timerMs('shutdown.completionGrace', options.completionGrace, alias ?? 5000, 0)
  if (alias !== undefined && alias !== completionGrace) throw new InvalidOptionError('websocket.closeGrace', 'conflicts with shutdown.completionGrace')
  return { completionGrace, taskGrace: timerMs('shutdown.taskGrace', options.taskGrace, 2000, 0) }
}

/**
 * Past this depth JSON.stringify itself overflows the stack (about 5,000 levels on Node 20):
 * a deeper limit would admit requests whose answer cannot be written.
 */
const MAX_JSON_DEPTH = 1000

function jsonDepth (value: unknown): number {
  const depth = integer('maxJsonDepth', value, DEFAULT_MAX_JSON_DEPTH)
  if (depth > MAX_JSON_DEPTH) throw new InvalidOptionError('maxJsonDepth', `must be at most ${MAX_JSON_DEPTH}`)
  return depth
}

function flag (name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new InvalidOptionError(name, 'must be a boolean')
  return value
}

function pushOptions (given: PushOptions | undefined, declared: boolean): NormalizedPushOptions | undefined {
  if (!declared) {
    if (given !== undefined) throw new InvalidOptionError('push', 'needs card.capabilities.pushNotifications to be true')
    return undefined
  }
  const options = group('push', given)
  const { allow = PUSH_DEFAULTS.allow, onDelivery, resolve } = options
  if (!Array.isArray(allow)) throw new InvalidOptionError('push.allow', 'must be an array of host names, IP addresses or CIDR ranges')
  for (const entry of allow) {
    const problem = WebhookGuard.checkEntry(entry)
    if (problem !== undefined) throw new InvalidOptionError('push.allow', problem)
  }
  if (onDelivery !== undefined && typeof onDelivery !== 'function') throw new InvalidOptionError('push.onDelivery', 'must be a function')
  if (resolve !== undefined && typeof resolve !== 'function') throw new InvalidOptionError('push.resolve', 'must be a function')
  return {
    allow,
    timeout: timerMs('push.timeout', options.timeout, PUSH_DEFAULTS.timeout, 1),
    maxAttempts: integer('push.maxAttempts', options.maxAttempts, PUSH_DEFAULTS.maxAttempts),
    retryDelay: timerMs('push.retryDelay', options.retryDelay, PUSH_DEFAULTS.retryDelay, 0),
    maxRetryDelay: timerMs('push.maxRetryDelay', options.maxRetryDelay, PUSH_DEFAULTS.maxRetryDelay, 0),
    maxQueued: integer('push.maxQueued', options.maxQueued, PUSH_DEFAULTS.maxQueued),
    maxConfigsPerTask: integer('push.maxConfigsPerTask', options.maxConfigsPerTask, PUSH_DEFAULTS.maxConfigsPerTask),
    onDelivery,
    resolve
  }
}

function clusterOptions (options: A2APluginOptions): NormalizedClusterOptions | undefined {
  const { cluster } = options
  if (cluster === undefined) return undefined
  if (typeof cluster !== 'object' || cluster === null) throw new InvalidOptionError('cluster', 'must be an object')
  const storeMethods = ['register', 'renew', 'deregister', 'nextExpiry', 'acquire', 'release', 'releaseAll', 'owners', 'orphans', 'claim',
    'claimMessage', 'reclaimMessage', 'forgetMessage', 'recordDeliveries', 'ownsDelivery', 'finishDelivery', 'takeDeliveries', 'tidy']
  if (!hasMethods(cluster.store, storeMethods)) throw new InvalidOptionError('cluster.store', 'must be a ClusterStore, e.g. openPostgresStores(...).clusterStore')
  if (options.bus === undefined || !hasMethods(options.bus, ['command', 'onCommand'])) {
    throw new InvalidOptionError('bus', 'must be a bus across instances with command and onCommand (e.g. redisBus) when cluster is set')
  }
  if (options.recoverTasks === true) throw new InvalidOptionError('recoverTasks', 'cannot be true with cluster: failover recovers tasks by lease')
  const { instanceId = randomUUID(), onOrphan = CLUSTER_DEFAULTS.onOrphan } = cluster
  if (typeof instanceId !== 'string' || instanceId === '') throw new InvalidOptionError('cluster.instanceId', 'must be a non-empty string')
  if (onOrphan !== 'fail' && onOrphan !== 'resume') throw new InvalidOptionError('cluster.onOrphan', 'must be "fail" or "resume"')
  if (onOrphan === 'resume' && typeof options.executor.resume !== 'function') {
    throw new InvalidOptionError('cluster.onOrphan', '"resume" needs executor.resume(context, events)')
  }
  const leaseTtl = timerMs('cluster.leaseTtl', cluster.leaseTtl, CLUSTER_DEFAULTS.leaseTtl, 3)
  const third = Math.floor(leaseTtl / 3)
  const heartbeatInterval = timerMs('cluster.heartbeatInterval', cluster.heartbeatInterval, third, 1)
  if (heartbeatInterval >= leaseTtl) throw new InvalidOptionError('cluster.heartbeatInterval', 'must be less than cluster.leaseTtl')
  return {
    store: cluster.store,
    instanceId,
    leaseTtl,
    heartbeatInterval,
    sweepInterval: timerMs('cluster.sweepInterval', cluster.sweepInterval, third, 1),
    cancelTimeout: timerMs('cluster.cancelTimeout', cluster.cancelTimeout, leaseTtl, 1),
    onOrphan,
    messageIdTtl: integer('cluster.messageIdTtl', cluster.messageIdTtl, CLUSTER_DEFAULTS.messageIdTtl)
  }
}

function stringList (name: string, value: unknown): void {
  if (value !== undefined && (!Array.isArray(value) || value.length === 0 || !value.every(item => typeof item === 'string' && item !== ''))) {
    throw new InvalidOptionError(name, 'must be a non-empty array of non-empty strings')
  }
}

function stringOrList (name: string, value: unknown): void {
  const nonEmpty = (item: unknown) => typeof item === 'string' && item !== ''
  if (value !== undefined && !nonEmpty(value) && (!Array.isArray(value) || value.length === 0 || !value.every(nonEmpty))) {
    throw new InvalidOptionError(name, 'must be a non-empty string or a non-empty array of them')
  }
}

function checkAuth (auth: AuthOptions | undefined): AuthOptions | undefined {
  if (auth === undefined) return undefined
  object('auth', auth)
  if (auth.bearer === undefined && auth.apiKey === undefined && auth.jwt === undefined) {
    throw new InvalidOptionError('auth', 'must configure bearer, apiKey or jwt')
  }
  const { bearer, apiKey, jwt } = auth
  if (bearer !== undefined) {
    object('auth.bearer', bearer)
    stringList('auth.bearer.tokens', bearer.tokens)
    optionalFunction('auth.bearer.verify', bearer.verify)
    if (bearer.tokens === undefined && bearer.verify === undefined) throw new InvalidOptionError('auth.bearer', 'needs tokens or a verify function')
  }
  if (apiKey !== undefined) {
    object('auth.apiKey', apiKey)
    if (typeof apiKey.name !== 'string' || !TOKEN.test(apiKey.name)) throw new InvalidOptionError('auth.apiKey.name', 'must be a header or query parameter name')
    if (apiKey.in !== undefined && apiKey.in !== 'header' && apiKey.in !== 'query') throw new InvalidOptionError('auth.apiKey.in', 'must be "header" or "query"')
    stringList('auth.apiKey.keys', apiKey.keys)
    optionalFunction('auth.apiKey.verify', apiKey.verify)
    if (apiKey.keys === undefined && apiKey.verify === undefined) throw new InvalidOptionError('auth.apiKey', 'needs keys or a verify function')
  }
  if (jwt !== undefined) {
    object('auth.jwt', jwt)
    if ((jwt.jwksUrl === undefined) === (jwt.key === undefined)) throw new InvalidOptionError('auth.jwt', 'needs exactly one of jwksUrl and key')
    if (jwt.jwksUrl !== undefined) {
      const url = httpUrl('auth.jwt.jwksUrl', jwt.jwksUrl)
      // These keys decide who is authenticated: over plain http anyone on the path could swap them.
      if (url.protocol === 'http:' && !isLoopback(url)) {
        throw new InvalidOptionError('auth.jwt.jwksUrl', 'must be an https URL (http only to a loopback host: 127.0.0.0/8, ::1, localhost)')
      }
    }
    const { key } = jwt
    const isJwk = typeof key === 'object' && key !== null && typeof (key as { kty?: unknown }).kty === 'string'
    if (key !== undefined && !types.isCryptoKey(key) && !types.isKeyObject(key) && !isJwk && !(key instanceof Uint8Array && key.length > 0)) {
      throw new InvalidOptionError('auth.jwt.key', 'must be a CryptoKey, a KeyObject, a JWK or a non-empty Uint8Array')
    }
    stringOrList('auth.jwt.issuer', jwt.issuer)
    // Without it a token the same issuer minted for any other service would be accepted here.
    if (jwt.audience === undefined) throw new InvalidOptionError('auth.jwt.audience', 'is required: the aud this agent accepts')
    stringOrList('auth.jwt.audience', jwt.audience)
    if (jwt.clockTolerance !== undefined) {
      // jose reads the tolerance at each verification, where a bad one refuses every token:
      // its own reading, on an empty unsecured JWT, tells now.
      try { UnsecuredJWT.decode(new UnsecuredJWT({}).encode(), { clockTolerance: jwt.clockTolerance }) } catch {
        throw new InvalidOptionError('auth.jwt.clockTolerance', 'must be seconds >= 0 or a duration such as "30s"')
      }
    }
    stringList('auth.jwt.requiredScopes', jwt.requiredScopes)
    if (jwt.openIdConnectUrl !== undefined) httpUrl('auth.jwt.openIdConnectUrl', jwt.openIdConnectUrl)
  }
  // The realm is written inside the quoted string of every challenge: a control character or
  // one past Latin-1 (Node refuses both in a header, throwing on the first 401), `"` or `\`
  // would break it.
  if (auth.realm !== undefined && (typeof auth.realm !== 'string' || !/^[\x20-\x7e]*$/.test(auth.realm) || /["\\]/.test(auth.realm))) {
    throw new InvalidOptionError('auth.realm', 'must be printable ASCII without " or \\')
  }
  flag('auth.refuseAtUpgrade', auth.refuseAtUpgrade, false)
  return auth
}

function checkRateLimit (limit: RateLimitOptions | undefined): RateLimitOptions | undefined {
  if (limit === undefined) return undefined
  object('rateLimit', limit)
  integer('rateLimit.max', limit.max ?? 0, 0)
  timerMs('rateLimit.timeWindow', limit.timeWindow, 60_000, 1)
  if (limit.store !== undefined && !hasMethods(limit.store, ['incr'])) throw new InvalidOptionError('rateLimit.store', 'must implement incr(key, callback, timeWindow, max)')
  // @fastify/rate-limit's RedisStore defines its Lua commands on the client.
  if (limit.redis !== undefined && !hasMethods(limit.redis, ['defineCommand'])) throw new InvalidOptionError('rateLimit.redis', 'must be an ioredis client (with defineCommand)')
  optionalFunction('rateLimit.keyGenerator', limit.keyGenerator)
  integer('rateLimit.cacheSize', limit.cacheSize, DEFAULT_CACHE_SIZE)
  timerMs('rateLimit.storeTimeout', limit.storeTimeout, DEFAULT_STORE_TIMEOUT, 0)
  if (limit.cacheSize !== undefined && (limit.store !== undefined || limit.redis !== undefined)) {
    throw new InvalidOptionError('rateLimit.cacheSize', 'is for the in-memory store: not with store or redis')
  }
  return limit
}

/** Whether the key fits `alg` is known only by signing (asynchronous): the plugin signs the card once at registration. */
function checkSigning (signing: CardSigningOptions | undefined, publicUrl: string | undefined): CardSigningOptions | undefined {
  if (signing === undefined) return undefined
  object('signing', signing)
  if (!['ES256', 'EdDSA', 'Ed25519'].includes(signing.alg)) throw new InvalidOptionError('signing.alg', 'must be ES256, EdDSA or Ed25519')
  if (typeof signing.kid !== 'string' || signing.kid === '') throw new InvalidOptionError('signing.kid', 'must be a non-empty key id')
  if (signing.key === undefined || signing.key === null) throw new InvalidOptionError('signing.key', 'is required')
  // RFC 7515 §4.1.2: the JWK Set must be fetched over a channel with integrity protection.
  const { jku } = signing
  if (jku !== undefined && !(typeof jku === 'string' && URL.canParse(jku) && new URL(jku).protocol === 'https:')) {
    throw new InvalidOptionError('signing.jku', 'must be an https URL')
  }
  // Without it the card's URLs come from each request's Host (or X-Forwarded-*): anyone could
  // get a genuinely signed card naming a host of their choosing.
  if (publicUrl === undefined) throw new InvalidOptionError('signing', 'needs publicUrl: a signed card must not take its URLs from the request')
  return signing
}

function checkTenancy (options: TenancyOptions | undefined): TenancyOptions | undefined {
  if (options === undefined) return undefined
  object('tenancy', options)
  if (options.header !== undefined && (typeof options.header !== 'string' || !TOKEN.test(options.header))) throw new InvalidOptionError('tenancy.header', 'must be a header name')
  optionalFunction('tenancy.resolve', options.resolve)
  return options
}

export function interceptorList (value: unknown): A2AInterceptor[] {
  if (value === undefined) return []
  const hooks = ['before', 'onComplete', 'onUpgrade']
  const valid = (item: unknown) => typeof item === 'object' && item !== null &&
    hooks.every(hook => (item as Record<string, unknown>)[hook] === undefined || typeof (item as Record<string, unknown>)[hook] === 'function')
  if (!Array.isArray(value) || !value.every(valid)) {
    throw new InvalidOptionError('interceptors', 'must be an array of { before?, onComplete?, onUpgrade? } objects')
  }
  return [...value]
}

export function normalizeOptions (options: A2APluginOptions): NormalizedOptions {
  if (!hasMethods(options.executor, ['execute'])) throw new InvalidOptionError('executor', 'must be an object with an execute(context, events) method')
  const card = checkCard('card', options.card)

  let publicUrl: string | undefined
  if (options.publicUrl !== undefined) {
    const url = httpUrl('publicUrl', options.publicUrl)
    publicUrl = url.origin + url.pathname.replace(/\/+$/, '')
  }

  const prefix = options.prefix ?? ''
  if (typeof prefix !== 'string' || (prefix !== '' && !prefix.startsWith('/'))) throw new InvalidOptionError('prefix', 'must be a path starting with /')

  let extendedCard: ExtendedCardProvider | undefined
  if (typeof options.extendedCard === 'function') extendedCard = options.extendedCard
  else if (options.extendedCard !== undefined) {
    const fixed = checkCard('extendedCard', options.extendedCard)
    extendedCard = () => fixed
  }

  if (options.taskStore !== undefined && !hasMethods(options.taskStore, ['create', 'get', 'update', 'list'])) {
    throw new InvalidOptionError('taskStore', 'must implement create, get, update and list')
  }
  if (options.pushConfigStore !== undefined && !hasMethods(options.pushConfigStore, ['set', 'get', 'list', 'delete'])) {
    throw new InvalidOptionError('pushConfigStore', 'must implement set, get, list and delete')
  }
  if (options.bus !== undefined && !hasMethods(options.bus, ['publish', 'subscribe', 'listenerCount'])) {
    throw new InvalidOptionError('bus', 'must implement publish, subscribe and listenerCount')
  }
  const { cors } = options
  if (cors !== undefined && typeof cors !== 'boolean' && (typeof cors !== 'object' || cors === null || Array.isArray(cors))) {
    throw new InvalidOptionError('cors', 'must be a boolean or an object of @fastify/cors options')
  }
  for (const name of ['allowMissingVersion', 'allowUndeclaredInputModes'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') throw new InvalidOptionError(name, 'must be a boolean')
  }
  const cluster = clusterOptions(options)

  return {
    executor: options.executor,
    card,
    publicUrl,
    prefix: prefix.replace(/\/+$/, ''),
    extendedCard,
    taskStore: options.taskStore,
    pushConfigStore: options.pushConfigStore,
    bus: options.bus,
    bodyLimit: integer('bodyLimit', options.bodyLimit, 4 * 1024 * 1024),
    allowMissingVersion: options.allowMissingVersion ?? false,
    coalesceReplies: flag('coalesceReplies', options.coalesceReplies, true),
    maxQueuedEvents: integer('maxQueuedEvents', options.maxQueuedEvents, 1024),
    sseKeepAlive: timerMs('sseKeepAlive', options.sseKeepAlive, 15_000, 0),
    maxJsonDepth: jsonDepth(options.maxJsonDepth),
    executorTimeout: timerMs('executorTimeout', options.executorTimeout, DEFAULT_EXECUTOR_TIMEOUT, 1),
    busReadyTimeout: timerMs('busReadyTimeout', options.busReadyTimeout, DEFAULT_BUS_READY_TIMEOUT, 1),
    finalStateRetry: timerMs('finalStateRetry', options.finalStateRetry, DEFAULT_FINAL_STATE_RETRY, 0),
    shutdown: shutdownOptions(group('shutdown', options.shutdown), options.websocket?.closeGrace),
    cardMaxAge: integer('cardMaxAge', options.cardMaxAge, 300, 0),
    allowUndeclaredInputModes: options.allowUndeclaredInputModes ?? false,
    interceptors: interceptorList(options.interceptors),
    websocket: webSocketOptions(group('websocket', options.websocket)),
    push: pushOptions(options.push, card.capabilities.pushNotifications === true),
    cluster,
    // A starting instance of a cluster cannot tell a dead peer's tasks from a live one's.
    recoverTasks: flag('recoverTasks', options.recoverTasks, cluster === undefined),
    auth: checkAuth(options.auth),
    rateLimit: checkRateLimit(options.rateLimit),
    tenancy: checkTenancy(options.tenancy),
    cors: cors === undefined || cors === false ? undefined : cors === true ? {} : cors,
    signing: checkSigning(options.signing, publicUrl)
  }
}
