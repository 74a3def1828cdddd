// The WebSocket binding's connection logic (seed 000 §3–§5), independent of any
// WebSocket library: `makeWebSocketServer` works over the minimal `WebSocketLike`
// socket below, and a thin adapter (websocket.ts) wires a real `ws` socket to it. Every
// frame is one JSON-RPC message; requests are multiplexed, correlated by id.
import { JsonParseError, StreamLaggedError, UnavailableError, retryInfo, toA2AError, type A2AError } from '../errors/index.js'
import type { FastifyRequest } from 'fastify'
import type { CallContext } from '../handler/executor.js'
import type { StreamResponse } from '../schema/wire.js'
import type { ServiceParams } from '../service-params.js'
import type { CallRunner } from './call.js'
import { failure, parseEnvelope, success, type JsonRpcId, type JsonRpcRequest } from './rpc.js'

export const WEBSOCKET_BINDING_URI = 'https://a2a-rust.com/bindings/websocket/v1'

/** The transport marker after a stream's last event (seed 000 §4); not a StreamResponse. */
export const STREAM_COMPLETE = { status: 'stream_complete' } as const

/** Close codes used by the binding (RFC 6455 §7.4.1). */
export const CloseCode = { GoingAway: 1001, MessageTooBig: 1009 } as const

/** What the connection logic needs of a socket. */
export interface WebSocketLike {
  /** Bytes queued for sending and not yet written to the network. */
  readonly bufferedAmount: number
  readonly isOpen: boolean
  send (frame: string): void
  close (code: number, reason: string): void
  ping (): void
}

export interface WebSocketServerOptions {
  runner: CallRunner
  /** Requests in progress at once on one connection (a stream counts until it ends). */
  maxInFlight: number
  /** Largest incoming message in bytes; a larger one ends the connection with 1009. */
  maxMessageSize: number
  /** A stream whose socket has more than this many bytes buffered ends with STREAM_LAGGED. */
  maxBufferedBytes: number
  /** Close a connection silent for this long with 1001 (pings keep a live peer busy); 0 = never. */
  idleTimeout: number
  onError (error: A2AError): void
}

/** What the connection learnt at the handshake; it applies to every request on it. */
export interface ConnectionInfo {
  serviceParams: Readonly<ServiceParams>
  version: string | undefined
  extensions: readonly string[]
  /** The upgrade request, which the interceptors of every call on the connection see. */
  request?: FastifyRequest
}

/** The events an adapter forwards from its socket. */
export interface Connection {
  message (data: string | Buffer, isBinary: boolean): void
  /** Any sign of life from the peer other than a message (a pong). */
  alive (): void
  closed (): void
}

interface OpenConnection {
  inFlight: number
  socket: WebSocketLike
  /** Streams in progress, so that a dropped connection releases their subscriptions. */
  streams: Set<AsyncIterableIterator<StreamResponse>>
  idleTimer?: NodeJS.Timeout
}

export interface WebSocketServer {
  opened (socket: WebSocketLike, info: ConnectionInfo): Connection
  /** Connections open now. */
  readonly connections: number
  /** Waits until no request is in progress on any connection, or `graceMs` passes; then closes every connection with 1001. */
  drain (graceMs: number): Promise<void>
}

const RETRY_AFTER_MS = 1000

export function makeWebSocketServer (options: WebSocketServerOptions): WebSocketServer {
  const open = new Set<OpenConnection>()

  function send (connection: OpenConnection, frame: string): void {
    // A call that finishes after its connection dropped writes nothing.
    if (connection.socket.isOpen) connection.socket.send(frame)
  }

  function sendError (connection: OpenConnection, id: JsonRpcId, error: A2AError): void {
    options.onError(error)
    send(connection, failure(id, error))
  }

  async function run (connection: OpenConnection, request: JsonRpcRequest, info: ConnectionInfo): Promise<void> {
    const notification = !Object.hasOwn(request, 'id')
    const id: JsonRpcId = request.id ?? null
    const context: CallContext = {
      binding: WEBSOCKET_BINDING_URI,
      method: request.method.name,
      serviceParams: info.serviceParams as ServiceParams,
      tenant: '',
      extensions: [...info.extensions]
    }
    try {
      const result = await options.runner.run(request.method, request.params, info.version, context, info.request)
      if (result.kind === 'unary') {
        if (!notification) send(connection, success(id, result.value))
        return
      }
      await pipeStream(connection, id, result.events)
    } catch (error) {
      if (notification) options.onError(toA2AError(error))
      else sendError(connection, id, toA2AError(error))
    }
  }

  async function pipeStream (connection: OpenConnection, id: JsonRpcId, events: AsyncIterableIterator<StreamResponse>): Promise<void> {
    connection.streams.add(events)
    try {
      for (let next = await events.next(); next.done !== true; next = await events.next()) {
        if (!connection.socket.isOpen) return
        if (connection.socket.bufferedAmount > options.maxBufferedBytes) {
          // The reader fell behind: its stream ends here rather than buffering without bound.
          const queued = (events as { buffered?: number }).buffered ?? 0
          const dropped = queued + 1
          await events.return?.()
          sendError(connection, id, new StreamLaggedError(dropped).with({ metadata: { droppedEvents: String(dropped) } }))
          return
        }
        send(connection, success(id, next.value))
      }
      send(connection, success(id, STREAM_COMPLETE))
    } finally {
      connection.streams.delete(events)
    }
  }

  function armIdleTimer (connection: OpenConnection): void {
    if (options.idleTimeout === 0) return
    clearTimeout(connection.idleTimer)
    // Half-way through the idle period a ping asks a quiet peer to show it is there.
    connection.idleTimer = setTimeout(() => {
      if (!connection.socket.isOpen) return
      connection.socket.ping()
      connection.idleTimer = setTimeout(() => connection.socket.close(CloseCode.GoingAway, 'idle timeout'), options.idleTimeout - options.idleTimeout / 2)
      connection.idleTimer.unref()
    }, options.idleTimeout / 2)
    connection.idleTimer.unref()
  }

  return {
    get connections () {
      return open.size
    },

    opened (socket, info) {
      const connection: OpenConnection = { inFlight: 0, socket, streams: new Set() }
      open.add(connection)
      armIdleTimer(connection)
      return {
        message (data, isBinary) {
          armIdleTimer(connection)
          if (data.length > options.maxMessageSize) {
            socket.close(CloseCode.MessageTooBig, `message larger than ${options.maxMessageSize} bytes`)
            return
          }
          if (isBinary) {
            sendError(connection, null, new JsonParseError())
            return
          }
          const envelope = parseEnvelope(typeof data === 'string' ? data : data.toString('utf8'))
          if (!envelope.ok) {
            if (envelope.notification) options.onError(envelope.error)
            else sendError(connection, envelope.id, envelope.error)
            return
          }
          const { request } = envelope
          const notification = !Object.hasOwn(request, 'id')
          // A streaming method's only answer is its stream: as a notification it is not run.
          if (notification && request.method.kind === 'stream') return
          if (connection.inFlight >= options.maxInFlight) {
            const refusal = new UnavailableError(`${options.maxInFlight} requests are in progress on this connection`)
              .with({ details: [retryInfo(RETRY_AFTER_MS)] })
            sendError(connection, notification ? null : request.id ?? null, refusal)
            return
          }
          connection.inFlight++
          run(connection, request, info).finally(() => { connection.inFlight-- })
        },
        alive () {
          armIdleTimer(connection)
        },
        closed () {
          open.delete(connection)
          clearTimeout(connection.idleTimer)
          for (const events of connection.streams) void events.return?.()
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
