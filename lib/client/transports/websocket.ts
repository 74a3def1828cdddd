// The WebSocket binding's transport, in either dialect: seed 000 (dialects/seed000.ts,
// the default) or a2a.v1 (dialects/a2a-v1.ts, seed 001). One connection at a time, opened
// on the first call and again on the first call after it closed; calls multiplexed on it
// by the ids the transport generates.
//
// Aborting a stream (signal, timeout, or leaving the loop) ends the iterator at once and
// drops the stream's later frames. On a2a.v1 the transport also sends cancelStream for
// it; seed 000 has no way to stop it, so there the server goes on to the stream's end.
// Either way the stream counts against the connection's pending calls until the server's
// end arrives, as it does on the server. An aborted unary call is likewise counted until
// its answer arrives.
import type { StreamResponse } from '../../schema/wire.js'
import { Channel } from '../channel.js'
import { deadline, type Deadline } from '../deadline.js'
import { a2aV1 } from '../dialects/a2a-v1.js'
import type { Dialect } from '../dialects/dialect.js'
import { seed000 } from '../dialects/seed000.js'
import {
  ClientError, ConnectionError, InvalidResponseError, TooManyPendingError, closeError, errorFromJsonRpc, type StreamProgress
} from '../errors.js'
import {
  isFinalEvent, requestServiceParams, streamEvent, taskIdOf, type CallOptions, type StreamMethod, type Transport, type TransportOptions, type UnaryMethod
} from '../transport.js'
import { limitOption, timeoutOption } from '../options.js'
import { checkServiceParams, openWebSocket, type WebSocketConstructor, type WebSocketLike } from '../websocket-runtime.js'

export { WEBSOCKET_BINDING_URI } from '../dialects/seed000.js'

export type WebSocketDialectName = 'seed000' | 'a2a.v1'

const DIALECTS: Record<WebSocketDialectName, Dialect> = { seed000, 'a2a.v1': a2aV1 }

export interface WebSocketTransportOptions extends TransportOptions {
  /** The interface's `ws://` or `wss://` URL. */
  url: string
  /** A WebSocket class to use instead of the runtime's (e.g. `ws`'s, for its TLS options). */
  WebSocket?: WebSocketConstructor
  /**
   * 'seed000' (default): no subprotocol, service parameters at the upgrade only. 'a2a.v1'
   * (seed 001): offers and requires the subprotocol `a2a.v1`, sends each call's own
   * `serviceParams`, stops an abandoned stream with cancelStream.
   */
  dialect?: WebSocketDialectName
  /** Calls in progress at once on the connection, a stream counting until it ends; Infinity for no limit. Default: the server's limit, 64 on seed 000, 128 on a2a.v1. */
  maxPending?: number
  /** ms to wait for the upgrade; Infinity for no limit. Default 10,000. */
  connectTimeout?: number
}

/** What a call in progress does with the frames of its id. */
interface Listener {
  result (result: unknown): void
  /** The stream is over (seed 000's marker, a2a.v1's streamEnd). */
  complete (): void
  error (error: ClientError): void
  /** The connection closed first. */
  cut (close: Close, clientClosed: boolean): void
}

interface Close {
  code: number
  reason: string
}

/** What a call sends. */
interface Request {
  method: string
  stream: boolean
  params: object
  /** The call's own service parameters (a2a.v1). */
  serviceParams: Record<string, string> | undefined
}

/** Gives a call up: its later frames are dropped; `stopOnServer` also stops a stream on the server, where the dialect can. */
type GiveUp = (stopOnServer: boolean) => void

/** A call in progress; one whose caller gave up has no listener, and stays until the server ends it. */
interface Call {
  stream: boolean
  listener: Listener | undefined
}

/** One connection and the calls on it, by id. */
interface Connection {
  socket: WebSocketLike
  calls: Map<string, Call>
  nextId: number
  /** Set once the connection has closed. */
  closed?: Close
}

const CLIENT_CLOSE = 1000

/** A call cut by its connection's close, or by the transport's own close(). */
function cutError (close: Close, clientClosed: boolean, stream?: StreamProgress): ConnectionError {
  if (!clientClosed) return closeError(close.code, close.reason, stream)
  return new ConnectionError(`the transport was closed before the ${stream === undefined ? 'answer arrived' : 'stream ended'}`, { retryable: false, closeCode: close.code })
}

export class WebSocketTransport implements Transport {
  readonly binding: string
  readonly url: string
  readonly #options: WebSocketTransportOptions
  readonly #dialect: Dialect
  readonly #maxPending: number
  readonly #connectTimeout: number
  #connection: Promise<Connection> | undefined
  #open: Connection | undefined
  /** Calls waiting for the connection to open. */
  #waiting = 0
  #closed = false

  /** In a browser, service parameters other than A2A-Version throw a TypeError here: a browser cannot send them at the upgrade. */
  constructor (options: WebSocketTransportOptions) {
    checkServiceParams(options.serviceParams)
    const name = options.dialect ?? 'seed000'
    if (!Object.hasOwn(DIALECTS, name)) throw new TypeError(`dialect must be one of ${Object.keys(DIALECTS).join(', ')}; got ${String(name)}`)
    const dialect = DIALECTS[name]
    this.#options = options
    this.#dialect = dialect
    this.binding = dialect.binding
    this.url = options.url
    this.#maxPending = limitOption('maxPending', options.maxPending, dialect.maxPending)
    this.#connectTimeout = timeoutOption('connectTimeout', options.connectTimeout) ?? 10_000
    timeoutOption('timeout', options.timeout)
  }

  /** Calls in progress: waiting for the connection, answered by nothing yet, or given up by their caller but not yet ended by the server. */
  get pending (): number {
    return this.#waiting + (this.#open?.calls.size ?? 0)
  }

  /** Opens the connection now (calls open it when needed). */
  async connect (): Promise<void> {
    await this.#connect()
  }

  call (method: UnaryMethod, params: object, options: CallOptions = {}): Promise<unknown> {
    const limit = this.#admit(options)
    if (limit !== undefined) return Promise.reject(limit)
    const call = deadline(options, this.#options.timeout)
    return new Promise<unknown>((resolve, reject) => {
      const settle = (error: unknown, value?: unknown) => {
        call.dispose()
        if (error === undefined) resolve(value)
        else reject(error)
      }
      this.#start({ method, stream: false, params, serviceParams: options.serviceParams }, call, {
        result: (result) => settle(undefined, result),
        complete: () => settle(new InvalidResponseError(`${method} is not a stream, yet its answer was a stream's end`)),
        error: (error) => settle(error),
        cut: (close, clientClosed) => settle(cutError(close, clientClosed))
      }, (reason) => settle(reason))
    })
  }

  stream (method: StreamMethod, params: object, options: CallOptions = {}): AsyncIterableIterator<StreamResponse> {
    const limit = this.#admit(options)
    if (limit !== undefined) return Channel.failed(limit)
    const call = deadline(options)
    let stop: GiveUp = () => {}
    // The reader leaving the loop gives the stream up like an abort, without an error.
    const channel = new Channel<StreamResponse>(() => finish(() => {}, true))
    const progress: StreamProgress = { taskId: undefined, received: 0 }
    stop = this.#start({ method, stream: true, params, serviceParams: options.serviceParams }, call, {
      result: (result) => {
        let event: StreamResponse
        try {
          event = streamEvent(result)
        } catch (error) {
          // Not an event: the stream fails with it and is given up on the server.
          finish(() => channel.fail(error), true)
          return
        }
        progress.received++
        progress.taskId ??= taskIdOf(event)
        channel.push(event)
        // Nothing can follow a final event but the end: the reader need not wait for it.
        if (isFinalEvent(event, progress.received === 1)) finish(() => channel.end(), false)
      },
      complete: () => finish(() => channel.end(), false),
      error: (error) => finish(() => channel.fail(error), false),
      cut: (close, clientClosed) => finish(() => channel.fail(cutError(close, clientClosed, progress)), false)
    }, (reason) => finish(() => channel.abort(reason), true))
    /** `stopOnServer`: the stream is given up before its end, which the server is to be told of. */
    function finish (end: () => void, stopOnServer: boolean) {
      call.dispose()
      end()
      stop(stopOnServer)
    }
    return channel
  }

  /** Closes the connection (code 1000); calls in progress fail with a ConnectionError. Later calls are refused. */
  async close (): Promise<void> {
    this.#closed = true
    const connection = await this.#connection?.catch(() => undefined)
    if (connection === undefined || connection.closed !== undefined) return
    const closed = new Promise<void>(resolve => connection.socket.addEventListener('close', () => resolve()))
    connection.socket.close(CLIENT_CLOSE)
    this.#drop(connection, { code: CLIENT_CLOSE, reason: '' }, true)
    await closed
  }

  /** The refusal of a call that cannot start: the transport is closed, a timeout that is none, the signal aborted, the connection full, or parameters the dialect cannot send. */
  #admit (options: CallOptions): unknown {
    if (this.#closed) return new ConnectionError('the transport is closed', { retryable: false })
    try {
      timeoutOption('timeout', options.timeout)
    } catch (error) {
      return error
    }
    if (options.signal?.aborted === true) return options.signal.reason
    if (!this.#dialect.perRequestParams && Object.keys(options.serviceParams ?? {}).length > 0) {
      return new TypeError('seed 000 sends service parameters with the upgrade only (§2): set them on the transport, or use the a2a.v1 dialect')
    }
    if (this.pending >= this.#maxPending) return new TooManyPendingError(this.#maxPending)
    return undefined
  }

  /**
   * Opens the connection if needed, then sends the request. `onAbort` runs when the
   * deadline fires first. Returns a function that gives the call up (its later frames dropped).
   */
  #start (request: Request, call: Deadline, listener: Listener, onAbort: (reason: unknown) => void): GiveUp {
    /** Where the request went, once it is sent. */
    let sent: { connection: Connection, id: string } | undefined
    let stopped = false
    const giveUp: GiveUp = (stopOnServer) => {
      if (stopped) return
      stopped = true
      call.signal.removeEventListener('abort', abort)
      const inProgress = sent?.connection.calls.get(sent.id)
      if (sent === undefined || inProgress === undefined) return
      inProgress.listener = undefined
      // a2a.v1 stops the stream on the server; its end, still awaited, frees the slot.
      const { cancel } = this.#dialect
      if (stopOnServer && inProgress.stream && cancel !== undefined && sent.connection.closed === undefined) sent.connection.socket.send(cancel(sent.id))
    }
    const abort = () => {
      onAbort(call.signal.reason)
      giveUp(true)
    }
    if (call.signal.aborted) {
      abort()
      return giveUp
    }
    call.signal.addEventListener('abort', abort, { once: true })
    this.#waiting++
    this.#connect().then((open) => {
      this.#waiting--
      if (stopped) return
      if (open.closed !== undefined) {
        // It closed between opening and this call's turn.
        giveUp(false)
        listener.cut(open.closed, this.#closed)
        return
      }
      const id = String(++open.nextId)
      sent = { connection: open, id }
      open.calls.set(id, { stream: request.stream, listener })
      const serviceParams = this.#dialect.perRequestParams ? requestServiceParams(this.#options.serviceParams, request.serviceParams) : undefined
      open.socket.send(this.#dialect.request(id, request.method, request.params, serviceParams))
    }, (error: unknown) => {
      this.#waiting--
      if (stopped) return
      giveUp(false)
      listener.error(error instanceof ClientError ? error : new ConnectionError('the connection could not be opened', { cause: error }))
    })
    return giveUp
  }

  #connect (): Promise<Connection> {
    if (this.#closed) return Promise.reject(new ConnectionError('the transport is closed', { retryable: false }))
    this.#connection ??= openWebSocket({
      url: this.url,
      serviceParams: this.#options.serviceParams,
      WebSocket: this.#options.WebSocket,
      subprotocol: this.#dialect.subprotocol,
      connectTimeout: this.#connectTimeout
    }).then((socket) => {
      const connection: Connection = { socket, calls: new Map(), nextId: 0 }
      socket.addEventListener('message', (event: { data: unknown }) => {
        if (typeof event.data === 'string') this.#receive(connection, event.data)
      })
      socket.addEventListener('close', (event: Close) => this.#drop(connection, { code: event.code, reason: event.reason }, false))
      this.#open = connection
      return connection
    }, (error: unknown) => {
      this.#connection = undefined
      throw error
    })
    return this.#connection
  }

  #receive (connection: Connection, text: string): void {
    const frame = this.#dialect.read(text)
    // Frames of no call (a null id, an unknown one) have no one to tell.
    if (frame.kind === 'unreadable' || frame.id === null) return
    const call = connection.calls.get(frame.id)
    if (call === undefined) return
    // A stream's event leaves it in progress; anything else ends the call.
    if (!(call.stream && frame.kind === 'result')) connection.calls.delete(frame.id)
    const { listener } = call
    if (listener === undefined) return
    if (frame.kind === 'result') listener.result(frame.result)
    else if (frame.kind === 'complete') listener.complete()
    else listener.error(errorFromJsonRpc(frame.error))
  }

  #drop (connection: Connection, close: Close, clientClosed: boolean): void {
    connection.closed ??= close
    if (this.#open === connection) {
      this.#open = undefined
      this.#connection = undefined
    }
    const calls = [...connection.calls.values()]
    connection.calls.clear()
    for (const call of calls) call.listener?.cut(close, clientClosed)
  }
}
