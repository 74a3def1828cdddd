// The WebSocket binding on @fastify/websocket (seed 000, and the a2a.v1 dialect of seed
// 001 for a client that offers that subprotocol): the upgrade route at the plugin's root
// path, the handshake checks (`ws`'s own, Origin, connections, A2A-Version, a2a.v1's
// credential and per-identity cap), the subprotocol selected, the connection-scoped service
// parameters, and the thin adapter from a `ws` socket to the connection logic in
// websocket-connection.ts.
import { newId } from '../ids.js'
import { ServerResponse, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import type {} from '@fastify/websocket'
import {
  OriginNotAllowedError, UnavailableError, UnsupportedOperationError, errorHeaders, shuttingDown, toA2AError, toRestError, type A2AError
} from '../errors/index.js'
import type { Identity } from '../interceptors/auth.js'
import type { A2AInterceptor } from '../interceptors/types.js'
import { requestedExtensions, requestedVersion, serviceParamsFromHeaders, type ServiceParams } from '../service-params.js'
import { checkVersion } from './call.js'
import { logInternal } from './jsonrpc.js'
import { A2A_V1_SUBPROTOCOL, type ConnectionInfo, type WebSocketLike, type WebSocketServer } from './websocket-connection.js'

export { WEBSOCKET_BINDING_URI } from './websocket-connection.js'

/** This binding has no resumption, and the upgrade's headers reach every call (seed 000 §2). */
const DROPPED_HEADERS = new Set(['last-event-id'])

export interface WebSocketDispatcherOptions {
  server: WebSocketServer
  /** Origins a browser may connect from, compared whole ignoring ASCII case; undefined = any. */
  allowedOrigins?: readonly string[]
  /** Refuse an upgrade that has no Origin. */
  requireOrigin: boolean
  /** The largest message either dialect takes: `ws` refuses a larger one as its frame header arrives. */
  maxMessageSize: number
  /** WebSocket connections held at once; undefined = no cap. */
  maxConnections?: number
  allowMissingVersion: boolean
  /** Their `onUpgrade` hooks run before the 101 (e.g. a credential refused at the upgrade). */
  interceptors: readonly A2AInterceptor[]
  /** The a2a.v1 dialect's handshake; the dialect is served when this is set. */
  a2aV1?: { refuseAtUpgrade: boolean, maxConnectionsPerIdentity: number }
  /** The built-in authentication's check of an upgrade's credentials, when it is configured. */
  authenticate?: (request: FastifyRequest, serviceParams: Readonly<ServiceParams>) => Promise<Identity>
}

/** The subprotocol to select among those a client offers: a2a.v1 when it is served and offered; none means seed 000. */
function selectProtocol (offered: Iterable<string>, a2aV1: boolean): string | undefined {
  return a2aV1 && [...offered].includes(A2A_V1_SUBPROTOCOL) ? A2A_V1_SUBPROTOCOL : undefined
}

/** `ws`'s checks of an upgrade (websocket-server.js, handleUpgrade): its key pattern and versions. */
const WS_KEY = /^[+/0-9A-Za-z]{22}==$/
const WS_VERSIONS = new Set([8, 13])
const VERSION_FAULT = 'Missing or invalid Sec-WebSocket-Version header'
/** Comma-separated tokens (RFC 7230) with spaces or tabs around the commas, as `ws`'s subprotocol parser reads them. */
const PROTOCOL_LIST = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*,[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*$/

/**
 * Why `ws` would refuse this upgrade, in the order it checks, with its message; undefined
 * when it would not. Checked before `ws` sees the upgrade, so that its refusal carries the
 * REST error body too rather than `ws`'s text/html. `offered`: the subprotocol header's names.
 */
function handshakeFault (headers: IncomingHttpHeaders, offered: string[]): string | undefined {
  if (headers.upgrade?.toLowerCase() !== 'websocket') return 'Invalid Upgrade header'
  const key = headers['sec-websocket-key']
  if (key === undefined || !WS_KEY.test(key)) return 'Missing or invalid Sec-WebSocket-Key header'
  if (!WS_VERSIONS.has(Number(headers['sec-websocket-version']))) return VERSION_FAULT
  const protocols = headers['sec-websocket-protocol']
  if (protocols === undefined) return undefined
  // `ws` refuses a subprotocol offered twice.
  if (!PROTOCOL_LIST.test(protocols) || new Set(offered).size !== offered.length) return 'Invalid Sec-WebSocket-Protocol header'
}

function refuse (reply: FastifyReply, error: A2AError): FastifyReply {
  return reply.code(error.row.httpStatus).headers(errorHeaders(error)).type('application/a2a+json').send(JSON.stringify(toRestError(error)))
}

/**
 * The upgrade's header lines. `fastify.injectWS` (@fastify/websocket's test helper) hands a
 * request with `headers` alone: its lines are rebuilt from them.
 */
function rawHeadersOf (request: FastifyRequest): string[] {
  const lines = request.raw.rawHeaders as string[] | undefined
  if (lines !== undefined) return lines
  return Object.entries(request.headers).flatMap(([name, value]) =>
    value === undefined ? [] : (Array.isArray(value) ? value : [value]).flatMap(one => [name, String(one)]))
}

/** What the handshake checks hand the WebSocket route for one upgrade. */
interface Handshake {
  info: ConnectionInfo
  /** An upgrade injected by `fastify.injectWS` has no TCP connection to wait for: its slots are released when its WebSocket closes. */
  releaseOnClose?: () => void
}

/**
 * Lowers the largest message `ws` receives on this connection to `limit`: past it `ws` closes
 * with 1009 as the frame header arrives, before receiving the message. Its server's
 * `maxPayload` is one for every route, and on a server the application registered it is the
 * application's (100 MiB by default, and its own routes may need it): the connection's own
 * limit, its receiver's, is lowered instead. Set before the connection reads its first frame.
 */
function limitMessageSize (socket: WebSocket, limit: number): void {
  const receiver = (socket as unknown as { _receiver?: { _maxPayload: number } })._receiver
  // 0 is no limit.
  if (receiver !== undefined && (receiver._maxPayload === 0 || receiver._maxPayload > limit)) receiver._maxPayload = limit
}

function adapt (socket: WebSocket): WebSocketLike {
  // `ws` writes each frame to its TCP socket at once and offers no batching of its own:
  // corking that socket makes a burst of frames one write (`ws` counts what it holds in `bufferedAmount`).
  const tcp = (socket as unknown as { _socket: Socket })._socket
  return {
    get bufferedAmount () { return socket.bufferedAmount },
    get isOpen () { return socket.readyState === socket.OPEN },
    send: (frame) => socket.send(frame),
    close: (code, reason) => socket.close(code, reason),
    ping: () => socket.ping(),
    cork: () => tcp.cork(),
    uncork: () => tcp.uncork(),
    pauseReading: (resumed) => {
      socket.pause()
      // A ping's write completes after those of every frame queued before it.
      socket.ping(undefined, undefined, () => {
        socket.resume()
        resumed()
      })
    }
  }
}

export async function webSocketDispatcher (fastify: FastifyInstance, options: WebSocketDispatcherOptions): Promise<void> {
  const allowed = options.allowedOrigins === undefined ? undefined : new Set(options.allowedOrigins.map(origin => origin.toLowerCase()))
  const handshakes = new WeakMap<IncomingMessage, Handshake>()
  let reserved = 0
  /** a2a.v1 connections held by each identity authenticated at the upgrade. */
  const perIdentity = new Map<string, number>()

  /** The handshake checks run as a route hook, before the upgrade: a refusal is an HTTP status with the REST error body. */
  async function checkUpgrade (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!request.ws) return
    const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map(name => name.trim())
    const fault = handshakeFault(request.headers, offered)
    if (fault !== undefined) {
      // RFC 6455 §4.4: a refused version comes with the versions the server speaks.
      if (fault === VERSION_FAULT) reply.header('sec-websocket-version', '13, 8')
      // The row of 400 FAILED_PRECONDITION with an ErrorInfo (seed 000 §1) that names no A2A feature.
      await refuse(reply, new UnsupportedOperationError(fault))
      return
    }
    const origin = request.headers.origin
    if (origin === undefined ? options.requireOrigin : (allowed !== undefined && !allowed.has(origin.toLowerCase()))) {
      await refuse(reply, new OriginNotAllowedError(origin ?? '(none)'))
      return
    }
    if (options.maxConnections !== undefined && reserved >= options.maxConnections) {
      await refuse(reply, new UnavailableError(`${options.maxConnections} WebSocket connections are open`))
      return
    }
    // The slot is taken before the first await, or upgrades that arrive together would all
    // pass the cap. It is held until the TCP connection closes (an upgrade injected by
    // `fastify.injectWS` has none, and holds it until its WebSocket closes), and given back
    // at once when the upgrade is refused.
    reserved++
    let identity: string | undefined
    let released = false
    const release = () => {
      if (released) return
      released = true
      reserved--
      if (identity === undefined) return
      const left = (perIdentity.get(identity) ?? 1) - 1
      if (left === 0) perIdentity.delete(identity)
      else perIdentity.set(identity, left)
    }
    // Listening now, so a peer that leaves during the checks below frees its slot too.
    const tcp = request.raw.socket as Socket | undefined
    tcp?.once('close', release)
    const protocol = selectProtocol(offered, options.a2aV1 !== undefined)
    const serviceParams = serviceParamsFromHeaders(rawHeadersOf(request), DROPPED_HEADERS)
    const version = requestedVersion(serviceParams['a2a-version'], request.query)
    try {
      // a2a.v1 reads the version of each request, which may bring its own (seed 001).
      if (protocol === undefined) checkVersion(version, options.allowMissingVersion)
      for (const interceptor of options.interceptors) await interceptor.onUpgrade?.(request, serviceParams)
      const subject = protocol !== undefined && options.a2aV1?.refuseAtUpgrade === true ? (await options.authenticate?.(request, serviceParams))?.subject : undefined
      // An anonymous connection counts against no identity.
      if (subject !== undefined && subject !== '') {
        const held = perIdentity.get(subject) ?? 0
        if (options.a2aV1 !== undefined && held >= options.a2aV1.maxConnectionsPerIdentity) {
          throw new UnavailableError(`${options.a2aV1.maxConnectionsPerIdentity} WebSocket connections are open for this identity`)
        }
        perIdentity.set(subject, held + 1)
        identity = subject
      }
    } catch (error) {
      release()
      const refusal = toA2AError(error)
      // A failure (an interceptor's bug, an identity provider out of reach) is logged as on every call.
      logInternal(request, refusal)
      await refuse(reply, refusal)
      return
    }
    // A browser can only send the version in the query string: it is a parameter all the same.
    if (version !== undefined) serviceParams['a2a-version'] = version
    serviceParams[':path'] = request.url.split('?')[0] as string
    serviceParams[':connection-id'] = newId()
    const info = { serviceParams: Object.freeze(serviceParams), version, extensions: requestedExtensions(serviceParams['a2a-extensions']), request, protocol, identity }
    handshakes.set(request.raw, { info, releaseOnClose: tcp === undefined ? release : undefined })
  }

  // `ws` answers with the subprotocol its server's handleProtocols returns, read at each
  // upgrade: on the route, that is the one the checks above selected, whether the server
  // is the plugin's or one the user registered. A handleProtocols of the user's stays the
  // answer for their own routes (they may speak subprotocols of their own), and without
  // one those get `ws`'s default, the first offered.
  const wss = fastify.websocketServer
  const theirs = wss.options.handleProtocols
  wss.options.handleProtocols = (offered, request) => {
    const handshake = handshakes.get(request)
    if (handshake !== undefined) return handshake.info.protocol ?? false
    return typeof theirs === 'function' ? theirs(offered, request) : offered.values().next().value ?? false
  }

  fastify.get('/', { websocket: true, onRequest: checkUpgrade }, (socket: WebSocket, request: FastifyRequest) => {
    const { info, releaseOnClose } = handshakes.get(request.raw) as Handshake
    if (releaseOnClose !== undefined) socket.once('close', releaseOnClose)
    limitMessageSize(socket, options.maxMessageSize)
    const connection = options.server.opened(adapt(socket), info)
    // Listeners are attached at once so no frame that arrives with the upgrade is lost.
    socket.on('message', (data, isBinary) => connection.message(data as Buffer, isBinary))
    socket.on('pong', () => connection.alive())
    socket.on('close', () => connection.closed())
  })
}

/**
 * While the server shuts down @fastify/websocket no longer routes upgrades, and Node
 * leaves an upgrade without a listener hanging: answer each with 503 and the REST body.
 */
export function refuseUpgrades (server: Server): void {
  const refusal = shuttingDown()
  const body = JSON.stringify(toRestError(refusal))
  const status = refusal.row.httpStatus
  // The head every other refusal of an upgrade has (`refuse`), written by hand: no route answers.
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] as string}`,
    'Content-Type: application/a2a+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(errorHeaders(refusal)).map(([name, value]) => `${name}: ${value}`),
    'Connection: close'
  ]
  const answer = `${head.join('\r\n')}\r\n\r\n${body}`
  server.on('upgrade', (_request, socket: Socket) => { socket.end(answer) })
}

/**
 * Closes the connection of an upgrade request that a route answers over plain HTTP (any
 * route but the WebSocket one, or the 404 handler) once the answer is written: Node no
 * longer reads that connection as HTTP, and with @fastify/websocket's hooks kept to the
 * WebSocket route's context, nothing else would close it. Listens after
 * @fastify/websocket, which has by then given the socket the response the route writes.
 * An upgraded connection's response is never finished.
 */
export function closeUpgradesAnsweredOverHttp (server: Server): () => void {
  const onUpgrade = (_request: IncomingMessage, socket: Duplex) => {
    // The response Node's ServerResponse.assignSocket recorded on the socket.
    const response = (socket as { _httpMessage?: unknown })._httpMessage
    if (response instanceof ServerResponse) response.on('finish', destroyConnection)
  }
  server.on('upgrade', onUpgrade)
  return () => { server.off('upgrade', onUpgrade) }
}

/** A 'finish' listener: one function for every response, no closure per upgrade. */
function destroyConnection (this: ServerResponse): void {
  this.socket?.destroy()
}

/**
 * Disconnects a peer that opens a connection and does not complete a request (or an
 * upgrade) within `timeoutMs` of its TCP connection: on a TLS server that bounds the TLS
 * handshake too (seed 000 §7). It applies to every connection of the server until its
 * first request, since nothing tells an upgrade from a plain request before its headers.
 */
export function guardHandshakes (server: Server, timeoutMs: number): () => void {
  // The timer is kept on the TCP socket under a key of this guard's (another agent's guard on
  // the same server has its own): an HTTP/2 request's `socket` is a Proxy that forwards reads
  // to the session's socket, so the key is found through it where a lookup by identity is not.
  const timerKey = Symbol('handshake timer')
  type Guarded = Socket & { [timerKey]?: NodeJS.Timeout }
  // 'connection' gives the TCP socket, a TLS server's too; destroying it ends the TLS one.
  const onConnection = (socket: Guarded) => {
    const timer = setTimeout(() => socket.destroy(), timeoutMs)
    timer.unref()
    socket[timerKey] = timer
    socket.once('close', () => clearTimeout(timer))
  }
  const settled = (socket: Guarded) => {
    // A TLS server's requests arrive on the TLS socket, which holds the TCP one as `_parent`
    // (read through the Proxy too, for HTTP/2 over TLS).
    const tcp = (socket as { _parent?: Guarded | null })._parent ?? socket
    clearTimeout(tcp[timerKey])
  }
  const onRequest = (request: { socket: Socket }) => settled(request.socket)
  const onUpgrade = (_request: unknown, socket: Socket) => settled(socket)
  server.on('connection', onConnection)
  server.on('request', onRequest)
  server.prependListener('upgrade', onUpgrade)
  return () => {
    server.off('connection', onConnection)
    server.off('request', onRequest)
    server.off('upgrade', onUpgrade)
  }
}
