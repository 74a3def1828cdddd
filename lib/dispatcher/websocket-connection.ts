// The WebSocket binding's connection logic (seed 000 §3–§5, seed 001), independent of any
// WebSocket library: `makeWebSocketServer` works over the minimal `WebSocketLike` socket
// below, and a thin adapter (websocket.ts) wires a real `ws` socket to it. Every frame is
// one JSON-RPC message; requests are multiplexed, correlated by id. How a frame reads and
// how answers are written is the connection's dialect (websocket-dialects.ts); the calls,
// limits and timers here are the same for both dialects.
import { newId } from '../ids.js'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FastifyRequest } from 'fastify'
import { InvalidRequestError, MessageRateLimitedError, StreamLaggedError, UnavailableError, retryInfo, toA2AError, type A2AError } from '../errors/index.js'
import { spreadInto } from '../copy.js'
import type { CallContext } from '../handler/executor.js'
import { windowCounter, type RateLimitStore, type WindowCounter } from '../interceptors/rate-limit.js'
import { DEFAULT_MAX_JSON_DEPTH } from '../json-guard.js'
import type { StreamResponse } from '../schema/wire.js'
import { requestedExtensions, requestedVersion, type ServiceParams } from '../service-params.js'
import type { CallRunner } from './call.js'
import { failure, successOf, type JsonRpcId, type JsonRpcRequest } from './rpc.js'
import { A2A_V1_SUBPROTOCOL, CloseCode, RETRY_AFTER_MS, a2aV1, seed000, type Close, type Dialect, type Incoming } from './websocket-dialects.js'

export { A2A_V1_BINDING, A2A_V1_SUBPROTOCOL, CloseCode, STREAM_COMPLETE, WEBSOCKET_BINDING_URI } from './websocket-dialects.js'

/** What the connection logic needs of a socket. */
export interface WebSocketLike {
  /** Bytes queued for sending and not yet written to the network. */
  readonly bufferedAmount: number
  readonly isOpen: boolean
  send (frame: string): void
  close (code: number, reason: string): void
  ping (): void
  /** Hold what `send` writes until `uncork` (a net.Socket's cork): a burst of frames goes out in one write. Optional. */
  cork? (): void
  uncork? (): void
  /**
   * Stop reading the peer's messages until every frame `send` wrote so far has gone to the
   * network, then read again and call `resumed`. Optional: a socket without it is always read.
   */
  pauseReading? (resumed: () => void): void
}

/** The limits of one dialect's connections. */
export interface DialectLimits {
  /** Requests in progress at once on one connection (a stream counts until it ends). */
  maxInFlight: number
  /** Largest incoming message in bytes; a larger one ends the connection with 1009. */
  maxMessageSize: number
  /** Ping a peer silent for this many ms; 0 = never. */
  pingInterval: number
  /** Then close with 1001 a peer still silent after this many ms. */
  pongTimeout: number
  /** Close with 1001 after this many ms without an application message while no request is in progress; 0 = never. */
  idleTimeout: number
  /** Messages per window on one connection and on all the connections of one identity; past it -32000 and 1008. */
  messageRate?: { max: number, timeWindow: number, store?: RateLimitStore, cacheSize?: number }
}

export interface WebSocketServerOptions {
  runner: CallRunner
  /** Seed 000: requests in progress at once on one connection (a stream counts until it ends). */
  maxInFlight: number
  /** Seed 000: largest incoming message in bytes; a larger one ends the connection with 1009. */
  maxMessageSize: number
  /** A stream whose socket has more than this many bytes buffered ends with STREAM_LAGGED; a connection whose socket has more is not read until they are written. */
  maxBufferedBytes: number
  /** Seed 000: close a connection silent for this long with 1001 (pings keep a live peer busy); 0 = never. */
  idleTimeout: number
  /** Arrays and objects nested in a frame, checked before it is parsed; deeper is -32600. Default 64. */
  maxJsonDepth?: number
  /** The a2a.v1 dialect's limits; without them every connection speaks seed 000. */
  a2aV1?: DialectLimits
  /** A call's error to log, with the connection's upgrade (whose logger carries its request id). */
  onError (error: A2AError, info: ConnectionInfo): void
}

/** What the connection learnt at the handshake; it applies to every request on it. */
export interface ConnectionInfo {
  serviceParams: Readonly<ServiceParams>
  version: string | undefined
  extensions: readonly string[]
  /** The upgrade request, which the interceptors of every call on the connection see. */
  request?: FastifyRequest
  /** The subprotocol selected at the upgrade: `a2a.v1`, or none for seed 000. */
  protocol?: string
  /** The subject authenticated at the upgrade, under which the per-identity limits count. */
  identity?: string
}

/** The events an adapter forwards from its socket. */
export interface Connection {
  message (data: string | Buffer, isBinary: boolean): void
  /** Any sign of life from the peer other than a message (a pong). */
  alive (): void
  closed (): void
}

interface Served {
  dialect: Dialect
  limits: DialectLimits
  counter?: WindowCounter
}

interface OpenStream {
  id: JsonRpcId
  /** Set once the call has started its stream. */
  events?: AsyncIterableIterator<StreamResponse>
  /** Ended by the client (cancelStream): its end frame is written, and nothing after it. */
  cancelled: boolean
}

interface OpenConnection {
  socket: WebSocketLike
  info: ConnectionInfo
  served: Served
  /** The connection's own key in the message-rate store. */
  key: string
  inFlight: number
  /** Streams in progress, so that a cancel or a dropped connection releases their subscriptions. */
  streams: Set<OpenStream>
  /** a2a.v1: the ids of requests in progress, each one request's until it ends (cancelStream names one). */
  ids?: Set<JsonRpcId>
  /** The rate check of the last message: messages are acted on in the order they came. */
  admitted: Promise<void>
  heartbeat?: NodeJS.Timeout
  idle?: NodeJS.Timeout
  /** The socket is corked until the end of this tick (see `send`). */
  corked: boolean
  /** Set while reading is paused (see `accept`): the messages read meanwhile, in order. */
  held?: Incoming[]
}

export interface WebSocketServer {
  opened (socket: WebSocketLike, info: ConnectionInfo): Connection
  /** Connections open now. */
  readonly connections: number
  /** Waits until no request is in progress on any connection, or `graceMs` passes; then closes every connection with 1001. */
  drain (graceMs: number): Promise<void>
}

const RATE_EXCEEDED: Close = { code: CloseCode.PolicyViolation, reason: 'rate limit exceeded' }
const TRY_AGAIN_LATER: Close = { code: CloseCode.TryAgainLater, reason: 'try again later' }

/** Bytes a corked socket holds at most before they are written without waiting for the tick's end. */
const BATCH_BYTES = 64 * 1024

function uncork (connection: OpenConnection): void {
  if (!connection.corked) return
  connection.corked = false
  connection.socket.uncork?.()
}

const idOf = (incoming: Incoming): JsonRpcId =>
  incoming.kind === 'request' ? incoming.request.id ?? null : incoming.kind === 'close' ? null : incoming.id

export function makeWebSocketServer (options: WebSocketServerOptions): WebSocketServer {
  const open = new Set<OpenConnection>()
  const maxJsonDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH
  const serve = (dialect: Dialect, limits: DialectLimits): Served =>
    ({ dialect, limits, counter: limits.messageRate === undefined ? undefined : windowCounter(limits.messageRate) })
  // Seed 000's idle timeout: no application message and no request in progress that long
  // closes the connection, however it answers pings. A peer silent half that long is also
  // pinged, so one holding a request that stops answering is closed at the timeout too.
  const seed = serve(seed000, {
    maxInFlight: options.maxInFlight,
    maxMessageSize: options.maxMessageSize,
    pingInterval: options.idleTimeout / 2,
    pongTimeout: options.idleTimeout - options.idleTimeout / 2,
    idleTimeout: options.idleTimeout
  })
  const v1 = options.a2aV1 === undefined ? undefined : serve(a2aV1, options.a2aV1)

  // Never more held back than a stream may have buffered, so a batch alone is no lag.
  const batchBytes = Math.min(BATCH_BYTES, options.maxBufferedBytes)

  /**
   * Frames written in one tick (the replies to a burst of requests, a burst of stream
   * events) go out in one write: the socket is corked at the tick's first frame and
   * uncorked when the tick ends, or as soon as the batch reaches `batchBytes`. It is corked
   * only when nothing is buffered: a socket the network is not keeping up with batches
   * its writes anyway, and what `bufferedAmount` reports while corked is the batch alone.
   */
  function send (connection: OpenConnection, frame: string): void {
    const { socket } = connection
    // A call that finishes after its connection dropped writes nothing.
    if (!socket.isOpen) return
    if (!connection.corked && socket.cork !== undefined && socket.bufferedAmount === 0) {
      socket.cork()
      connection.corked = true
      process.nextTick(uncork, connection)
    }
    socket.send(frame)
    if (connection.corked && socket.bufferedAmount >= batchBytes) uncork(connection)
  }

  /** An error frame for `id`, then `close` when one is given. */
  function refuse (connection: OpenConnection, id: JsonRpcId, error: A2AError, close?: Close): void {
    options.onError(error, connection.info)
    send(connection, failure(id, error))
    if (close !== undefined) connection.socket.close(close.code, close.reason)
  }

  /** A failure no call caused (a bug, a broken socket): the connection does not go on. */
  function internalFailure (connection: OpenConnection, error: unknown): void {
    options.onError(toA2AError(error), connection.info)
    connection.socket.close(CloseCode.InternalError, 'internal error')
  }

  /** One request, to its answer or its stream's end; it counts as in progress until then. */
  async function run (connection: OpenConnection, request: JsonRpcRequest, serviceParams: ServiceParams | undefined, stream: OpenStream | undefined): Promise<void> {
    const { info, served: { dialect } } = connection
    const notification = !Object.hasOwn(request, 'id')
    const id: JsonRpcId = request.id ?? null
    // One async function with its own catch and finally: no promise chain per request.
    try {
      // A request's own parameters (a2a.v1) go over the upgrade's, for this call only.
      // Without a prototype, as on every binding: `params.constructor` is no parameter.
      const params: Readonly<ServiceParams> = serviceParams === undefined
        ? info.serviceParams
        : Object.freeze(spreadInto(spreadInto(Object.create(null), info.serviceParams), serviceParams) as ServiceParams)
      const context: CallContext = {
        binding: dialect.binding,
        method: request.method.name,
        serviceParams: params as ServiceParams,
        tenant: '',
        extensions: serviceParams === undefined ? [...info.extensions] : requestedExtensions(params['a2a-extensions'])
      }
      const version = serviceParams === undefined ? info.version : requestedVersion(params['a2a-version'], undefined) ?? info.version
      try {
        const result = await options.runner.run(request.method, request.params, version, context, info.request)
        if (result.kind === 'unary') {
          if (!notification) send(connection, successOf(id, request.method.serialize(result.value)))
          return
        }
        await pipeStream(connection, stream as OpenStream, result.events, request.method.serialize)
      } catch (error) {
        const a2aError = toA2AError(error)
        // A cancelled stream's end frame is its last: what fails after it is only logged.
        if (notification || stream?.cancelled === true) options.onError(a2aError, info)
        else refuse(connection, id, a2aError, dialect.closeAfter(a2aError, serviceParams))
      }
    } catch (error) {
      internalFailure(connection, error)
    } finally {
      connection.inFlight--
      if (stream !== undefined) connection.streams.delete(stream)
      // A cancelled stream's id was freed by its cancelStream, and may name another request now.
      if (!notification && stream?.cancelled !== true) connection.ids?.delete(id)
      if (connection.inFlight === 0) armIdle(connection)
    }
  }

  async function pipeStream (connection: OpenConnection, stream: OpenStream, events: AsyncIterableIterator<StreamResponse>, serialize: (event: StreamResponse) => string): Promise<void> {
    const { socket } = connection
    const { id } = stream
    const stopped = () => !socket.isOpen || stream.cancelled
    stream.events = events
    try {
      // The first event waits its turn too: control frames read before it (a cancelStream
      // right behind the request, still being admitted) are acted on first.
      if (connection.served.dialect.controlsStreams) await nextTurn()
      if (stopped()) return
      for (let next = await events.next(); next.done !== true; next = await events.next()) {
        if (stopped()) return
        if (socket.bufferedAmount > options.maxBufferedBytes) {
          // The reader fell behind: its stream ends here rather than buffering without bound.
          const queued = (events as { buffered?: number }).buffered ?? 0
          const dropped = queued + 1
          const lagged = new StreamLaggedError(dropped).with({ metadata: { droppedEvents: String(dropped) } })
          refuse(connection, id, lagged)
          await events.throw?.(lagged)
          return
        }
        send(connection, successOf(id, serialize(next.value)))
        if (connection.served.dialect.controlsStreams) await nextTurn()
      }
      if (!stopped()) send(connection, connection.served.dialect.end(id))
    } finally {
      // Releases the subscription however the stream stopped; a no-op once it ended.
      await events.return?.()
    }
  }

  /** cancelStream: each stream in progress with this id ends with one end frame; an unknown id is ignored. */
  function cancel (connection: OpenConnection, id: JsonRpcId): void {
    for (const stream of connection.streams) {
      if (stream.id !== id || stream.cancelled) continue
      stream.cancelled = true
      send(connection, connection.served.dialect.end(id))
      // Past its streamEnd the request is no longer in progress: its id is free at once.
      connection.ids?.delete(id)
      // The task goes on: only this subscription to it ends.
      void stream.events?.return?.()
    }
  }

  function dispatch (connection: OpenConnection, request: JsonRpcRequest, serviceParams: ServiceParams | undefined): void {
    const notification = !Object.hasOwn(request, 'id')
    // A streaming method's only answer is its stream: as a notification it is not run.
    if (notification && request.method.kind === 'stream') return
    const { dialect, limits } = connection.served
    if (connection.inFlight >= limits.maxInFlight) {
      // Flow control, as a 429 is: answered and not logged, or a client that floods frames floods the log.
      send(connection, failure(notification ? null : request.id ?? null, dialect.busy(limits.maxInFlight)))
      return
    }
    if (!notification && connection.ids !== undefined) {
      const id = request.id ?? null
      if (connection.ids.has(id)) {
        refuse(connection, id, new InvalidRequestError(`id ${JSON.stringify(id)} is already used by a request in progress`))
        return
      }
      connection.ids.add(id)
    }
    // A stream is known from its request on, so that a cancel arriving before it starts finds it.
    const stream: OpenStream | undefined = request.method.kind === 'stream' ? { id: request.id ?? null, cancelled: false } : undefined
    if (stream !== undefined) connection.streams.add(stream)
    connection.inFlight++
    void run(connection, request, serviceParams, stream)
  }

  function handle (connection: OpenConnection, incoming: Incoming): void {
    switch (incoming.kind) {
      case 'request':
        dispatch(connection, incoming.request, incoming.serviceParams)
        return
      case 'cancel':
        cancel(connection, incoming.id)
        return
      case 'close':
        connection.socket.close(incoming.close.code, incoming.close.reason)
        return
      case 'refused':
        if (incoming.notification) options.onError(incoming.error, connection.info)
        else refuse(connection, incoming.id, incoming.error, incoming.close)
    }
  }

  /**
   * A message read, acted on now or, while reading is paused, once it resumes. A peer that
   * does not read its answers stops being read: while the socket holds more than
   * `maxBufferedBytes` unsent, reading pauses (TCP then holds the peer's writes back) until
   * the peer has read what is buffered. What `ws` had already read waits, in order. Refusing
   * requests instead would write a frame for each, and would fail a reader that is only slow.
   */
  function accept (connection: OpenConnection, incoming: Incoming): void {
    const { socket } = connection
    if (connection.held !== undefined) {
      connection.held.push(incoming)
      return
    }
    if (socket.bufferedAmount > options.maxBufferedBytes && socket.pauseReading !== undefined) {
      connection.held = [incoming]
      socket.pauseReading(() => resumeReading(connection))
      return
    }
    const { counter } = connection.served
    if (counter === undefined) handle(connection, incoming)
    // Counting may wait on a shared store: each message waits for the one before.
    else connection.admitted = connection.admitted.then(() => admit(connection, counter, incoming)).catch((error: unknown) => internalFailure(connection, error))
  }

  /** The peer read what was buffered: the messages held are acted on (reading may pause again at any of them). */
  function resumeReading (connection: OpenConnection): void {
    const { held } = connection
    connection.held = undefined
    if (held === undefined || !connection.socket.isOpen) return
    try {
      for (const incoming of held) accept(connection, incoming)
    } catch (error) {
      internalFailure(connection, error)
    }
  }

  /** The message rate limit: per connection, and per identity across its connections. */
  async function admit (connection: OpenConnection, counter: WindowCounter, incoming: Incoming): Promise<void> {
    // A message queued behind one that closed the connection is not acted on.
    if (!connection.socket.isOpen) return
    let over: boolean
    try {
      const own = await counter.count(`ws-connection:${connection.key}`)
      const { identity } = connection.info
      const shared = identity === undefined ? undefined : await counter.count(`ws-identity:${identity}`)
      over = own.current > counter.max || (shared !== undefined && shared.current > counter.max)
    } catch (error) {
      // The budget cannot be checked now (its store failed): the message is not served.
      const unavailable = new UnavailableError('the message rate limit cannot be checked').with({ cause: error, details: [retryInfo(RETRY_AFTER_MS)] })
      refuse(connection, idOf(incoming), unavailable, TRY_AGAIN_LATER)
      return
    }
    if (over) refuse(connection, idOf(incoming), new MessageRateLimitedError(), RATE_EXCEEDED)
    else handle(connection, incoming)
  }

  /** Liveness: a peer silent for `pingInterval` is pinged, and closed with 1001 when still silent `pongTimeout` later. */
  function armHeartbeat (connection: OpenConnection): void {
    const { pingInterval, pongTimeout } = connection.served.limits
    if (pingInterval === 0) return
    clearTimeout(connection.heartbeat)
    connection.heartbeat = setTimeout(() => {
      if (!connection.socket.isOpen) return
      connection.socket.ping()
      connection.heartbeat = setTimeout(() => closeIdle(connection), pongTimeout)
      connection.heartbeat.unref()
    }, pingInterval)
    connection.heartbeat.unref()
  }

  /** Idle: no application message and no request in progress for `idleTimeout` closes with 1001. */
  function armIdle (connection: OpenConnection): void {
    const { idleTimeout } = connection.served.limits
    if (idleTimeout === 0 || !open.has(connection)) return
    clearTimeout(connection.idle)
    connection.idle = setTimeout(() => {
      if (connection.inFlight > 0) armIdle(connection)
      else closeIdle(connection)
    }, idleTimeout)
    connection.idle.unref()
  }

  /** Both the missed pong and the idle timeout close a silent peer, often at once: one close. */
  function closeIdle (connection: OpenConnection): void {
    if (connection.socket.isOpen) connection.socket.close(CloseCode.GoingAway, 'idle timeout')
  }

  return {
    get connections () {
      return open.size
    },

    opened (socket, info) {
      const served = info.protocol === A2A_V1_SUBPROTOCOL && v1 !== undefined ? v1 : seed
      const connection: OpenConnection = {
        socket, info, served, key: newId(), inFlight: 0, streams: new Set(), ids: served.dialect.controlsStreams ? new Set() : undefined, admitted: Promise.resolve(), corked: false
      }
      open.add(connection)
      armHeartbeat(connection)
      armIdle(connection)
      return {
        message (data, isBinary) {
          // Frames read after a close (in the same TCP read) are not acted on.
          if (!socket.isOpen) return
          armHeartbeat(connection)
          armIdle(connection)
          try {
            const { dialect, limits } = served
            if (data.length > limits.maxMessageSize) {
              socket.close(CloseCode.MessageTooBig, `message larger than ${limits.maxMessageSize} bytes`)
              return
            }
            accept(connection, isBinary ? dialect.binary() : dialect.read(typeof data === 'string' ? data : data.toString('utf8'), maxJsonDepth))
          } catch (error) {
            internalFailure(connection, error)
          }
        },
        alive () {
          armHeartbeat(connection)
        },
        closed () {
          open.delete(connection)
          clearTimeout(connection.heartbeat)
          clearTimeout(connection.idle)
          connection.held = undefined
          for (const stream of connection.streams) void stream.events?.return?.()
          connection.streams.clear()
        }
      }
    },

    async drain (graceMs) {
      const deadline = Date.now() + graceMs
      while ([...open].some(connection => connection.inFlight > 0) && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20))
      }
      for (const connection of open) connection.socket.close(CloseCode.GoingAway, 'server shutting down')
    }
  }
}
