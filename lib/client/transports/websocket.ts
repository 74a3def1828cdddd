// The WebSocket binding's transport (seed 000): one connection at a time, opened on the
// first call and again on the first call after it closed; calls multiplexed on it by the
// ids the transport generates. The framing is the dialect's (dialects/seed000.ts).
//
// Seed 000 has no in-band way to stop a stream. Aborting a stream (signal, timeout, or
// leaving the loop) ends the iterator at once and drops the stream's later frames; the
// server goes on until the stream's end, and until then the stream still counts against
// the connection's pending calls, as it does on the server (64 in progress, seed 000 §3).
// An aborted unary call is likewise counted until its answer arrives.
import type { StreamResponse } from '../../schema/wire.js'
import { Channel } from '../channel.js'
import { deadline, type Deadline } from '../deadline.js'
import type { Dialect } from '../dialects/dialect.js'
import { seed000 } from '../dialects/seed000.js'
import {
  ClientError, ConnectionError, InvalidResponseError, StreamIncompleteError, TooManyPendingError, errorFromJsonRpc
} from '../errors.js'
import { isFinalEvent, taskIdOf, type CallOptions, type StreamMethod, type Transport, type TransportOptions, type UnaryMethod } from '../transport.js'
import { checkServiceParams, openWebSocket, type WebSocketConstructor, type WebSocketLike } from '../websocket-runtime.js'

export const WEBSOCKET_BINDING_URI = 'https://a2a-rust.com/bindings/websocket/v1'

export interface WebSocketTransportOptions extends TransportOptions {
  /** The interface's `ws://` or `wss://` URL. */
  url: string
  /** A WebSocket class to use instead of the runtime's (e.g. `ws`'s, for its TLS options). */
  WebSocket?: WebSocketConstructor
  /** Calls in progress at once on the connection, a stream counting until it ends. Default 64, the server's limit. */
  maxPending?: number
  /** ms to wait for the upgrade. Default 10,000. */
  connectTimeout?: number
}

/** What a call in progress does with the frames of its id. */
interface Listener {
  result (result: unknown): void
  /** The stream is over (its marker). */
  complete (): void
  error (error: ClientError): void
  /** The connection closed first. */
  cut (closeCode: number, clientClosed: boolean): void
}

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
  closeCode?: number
}

const CLIENT_CLOSE = 1000
/** The server closed because a message was too large (RFC 6455 §7.4.1): the same call would fail again. */
const MESSAGE_TOO_BIG = 1009

export class WebSocketTransport implements Transport {
  readonly binding = WEBSOCKET_BINDING_URI
  readonly url: string
  readonly #options: WebSocketTransportOptions
  readonly #dialect: Dialect = seed000
  readonly #maxPending: number
  #connection: Promise<Connection> | undefined
  #open: Connection | undefined
  /** Calls waiting for the connection to open. */
  #waiting = 0
  #closed = false

  /** In a browser, service parameters other than A2A-Version throw a TypeError here: a browser cannot send them. */
  constructor (options: WebSocketTransportOptions) {
    checkServiceParams(options.serviceParams)
    this.#options = options
    this.url = options.url
    this.#maxPending = options.maxPending ?? 64
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
      this.#start(method, false, params, call, {
        result: (result) => settle(undefined, result),
        complete: () => settle(new InvalidResponseError(`${method} is not a stream, yet its answer was a stream's end`)),
        error: (error) => settle(error),
        cut: (closeCode, clientClosed) => settle(clientClosed
          ? new ConnectionError('the transport was closed before the answer arrived', { retryable: false, closeCode })
          : new ConnectionError(`the connection closed (${closeCode}) before the answer arrived`, { closeCode, retryable: closeCode !== MESSAGE_TOO_BIG }))
      }, (reason) => settle(reason))
    })
  }

  stream (method: StreamMethod, params: object, options: CallOptions = {}): AsyncIterableIterator<StreamResponse> {
    const limit = this.#admit(options)
    if (limit !== undefined) {
      const refused = new Channel<StreamResponse>(() => {})
      refused.fail(limit)
      return refused
    }
    const call = deadline(options)
    let stop = () => {}
    // The reader leaving the loop gives the stream up like an abort, without an error.
    const channel = new Channel<StreamResponse>(() => finish(() => {}))
    let received = 0
    let taskId: string | undefined
    stop = this.#start(method, true, params, call, {
      result: (result) => {
        const event = result as StreamResponse
        received++
        taskId ??= taskIdOf(event)
        channel.push(event)
        // Nothing can follow a final event but the marker: the reader need not wait for it.
        if (isFinalEvent(event)) finish(() => channel.end())
      },
      complete: () => finish(() => channel.end()),
      error: (error) => finish(() => channel.fail(error)),
      cut: (closeCode, clientClosed) => finish(() => channel.fail(clientClosed
        ? new ConnectionError('the transport was closed before the stream ended', { retryable: false, closeCode })
        : new StreamIncompleteError(`the connection closed (${closeCode}) after ${received} events, before the stream ended`, taskId, received, { closeCode, retryable: closeCode !== MESSAGE_TOO_BIG })))
    }, (reason) => finish(() => channel.abort(reason)))
    function finish (end: () => void) {
      call.dispose()
      end()
      stop()
    }
    return channel
  }

  /** Closes the connection (code 1000); calls in progress fail with a ConnectionError. Later calls are refused. */
  async close (): Promise<void> {
    this.#closed = true
    const connection = await this.#connection?.catch(() => undefined)
    if (connection === undefined || connection.closeCode !== undefined) return
    const closed = new Promise<void>(resolve => connection.socket.addEventListener('close', () => resolve()))
    connection.socket.close(CLIENT_CLOSE)
    this.#drop(connection, CLIENT_CLOSE, true)
    await closed
  }

  /** The refusal of a call that cannot start: the transport is closed, the signal aborted, or the connection full. */
  #admit (options: CallOptions): unknown {
    if (this.#closed) return new ConnectionError('the transport is closed', { retryable: false })
    if (options.signal?.aborted === true) return options.signal.reason
    if (this.pending >= this.#maxPending) return new TooManyPendingError(this.#maxPending)
    return undefined
  }

  /**
   * Opens the connection if needed, then sends the request. `onAbort` runs when the
   * deadline fires first. Returns a function that gives the call up (its later frames dropped).
   */
  #start (method: string, stream: boolean, params: object, call: Deadline, listener: Listener, onAbort: (reason: unknown) => void): () => void {
    let connection: Connection | undefined
    let id: string | undefined
    let stopped = false
    const giveUp = () => {
      if (stopped) return
      stopped = true
      call.signal.removeEventListener('abort', abort)
      const inProgress = id === undefined ? undefined : connection?.calls.get(id)
      if (inProgress !== undefined) inProgress.listener = undefined
    }
    const abort = () => {
      onAbort(call.signal.reason)
      giveUp()
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
      if (open.closeCode !== undefined) {
        // It closed between opening and this call's turn.
        giveUp()
        listener.cut(open.closeCode, this.#closed)
        return
      }
      connection = open
      id = String(++open.nextId)
      open.calls.set(id, { stream, listener })
      open.socket.send(this.#dialect.request(id, method, params))
    }, (error: unknown) => {
      this.#waiting--
      if (stopped) return
      giveUp()
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
      subprotocols: this.#dialect.subprotocols,
      connectTimeout: this.#options.connectTimeout ?? 10_000
    }).then((socket) => {
      const connection: Connection = { socket, calls: new Map(), nextId: 0 }
      socket.addEventListener('message', (event: { data: unknown }) => {
        if (typeof event.data === 'string') this.#receive(connection, event.data)
      })
      socket.addEventListener('close', (event: { code: number }) => this.#drop(connection, event.code, false))
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

  #drop (connection: Connection, closeCode: number, clientClosed: boolean): void {
    connection.closeCode ??= closeCode
    if (this.#open === connection) {
      this.#open = undefined
      this.#connection = undefined
    }
    const calls = [...connection.calls.values()]
    connection.calls.clear()
    for (const call of calls) call.listener?.cut(closeCode, clientClosed)
  }
}
