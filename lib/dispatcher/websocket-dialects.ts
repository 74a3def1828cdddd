// The two WebSocket dialects served on one route: what an incoming frame means and how
// answers are written. Seed 000 is the binding of a client that selects no subprotocol;
// a2a.v1 (seed 001) is the one of a client that offers `Sec-WebSocket-Protocol: a2a.v1`.
// A dialect is framing and close policy only: calls, limits and timers are the
// connection logic's (websocket-connection.ts), the same for both.
import {
  InvalidRequestError, JsonParseError, TooManyStreamsError, UnavailableError, errorTable, retryInfo,
  type A2AError, type ErrorRow
} from '../errors/index.js'
import { parseJson } from '../json-guard.js'
import { serviceParamsFromMap, type ServiceParams } from '../service-params.js'
import { parseEnvelope, readEnvelope, successOf, type Envelope, type JsonRpcId, type JsonRpcRequest } from './rpc.js'

export const WEBSOCKET_BINDING_URI = 'https://a2a-rust.com/bindings/websocket/v1'
/** The a2a.v1 dialect's `protocolBinding` in the card (seed 001). */
export const A2A_V1_BINDING = 'WEBSOCKET'
export const A2A_V1_SUBPROTOCOL = 'a2a.v1'

/** Seed 000's transport marker after a stream's last event (§4); not a StreamResponse. */
export const STREAM_COMPLETE = { status: 'stream_complete' } as const
const STREAM_COMPLETE_JSON = JSON.stringify(STREAM_COMPLETE)

/** Close codes (RFC 6455 §7.4.1, and the 4000 range of seed 001). */
export const CloseCode = {
  Normal: 1000,
  GoingAway: 1001,
  ProtocolError: 1002,
  UnsupportedData: 1003,
  PolicyViolation: 1008,
  MessageTooBig: 1009,
  InternalError: 1011,
  TryAgainLater: 1013,
  A2AProtocolError: 4000,
  AuthenticationRequired: 4001,
  VersionNotSupported: 4002
} as const

export interface Close {
  code: number
  reason: string
}

/** The retry delay a refusal for a busy connection suggests. */
export const RETRY_AFTER_MS = 1000

/** What one incoming message means. */
export type Incoming =
  | { kind: 'request', request: JsonRpcRequest, serviceParams?: ServiceParams }
  /** Stop the stream in progress with this id (a2a.v1). */
  | { kind: 'cancel', id: JsonRpcId }
  /** Answered with an error frame (no frame for a notification), then closed with `close` when set. */
  | { kind: 'refused', id: JsonRpcId, error: A2AError, notification: boolean, close?: Close }
  /** Closed without an answer. */
  | { kind: 'close', close: Close }

export interface Dialect {
  /** The card's `protocolBinding`, and the `binding` of a call's context. */
  readonly binding: string
  /**
   * The peer controls streams in progress (cancelStream): a stream writes one event per
   * turn of the event loop, so that a burst of events does not keep its control frames
   * unread until the burst is over.
   */
  readonly controlsStreams: boolean
  read (text: string, maxJsonDepth: number): Incoming
  binary (): Incoming
  /** The frame after a stream's last event, or after a stream the client cancelled. */
  end (id: JsonRpcId): string
  /** The refusal of a request past the connection's in-flight limit. */
  busy (limit: number): A2AError
  /**
   * The close that follows the error frame of a call whose own service parameters (a2a.v1)
   * were `own`; undefined: the connection stays open.
   */
  closeAfter (error: A2AError, own: Readonly<ServiceParams> | undefined): Close | undefined
}

const refused = (id: JsonRpcId, error: A2AError, close?: Close): Incoming => ({ kind: 'refused', id, error, notification: false, close })

function fromEnvelope (envelope: Envelope): Incoming {
  if (envelope.ok) return { kind: 'request', request: envelope.request }
  return { kind: 'refused', id: envelope.id, error: envelope.error, notification: envelope.notification }
}

/** Seed 000: the JSON-RPC binding's messages as they are; bad input is answered and the connection stays open. */
export const seed000: Dialect = {
  binding: WEBSOCKET_BINDING_URI,
  controlsStreams: false,
  read: (text, maxJsonDepth) => fromEnvelope(parseEnvelope(text, maxJsonDepth)),
  binary: () => refused(null, new JsonParseError()),
  end: (id) => successOf(id, STREAM_COMPLETE_JSON),
  busy: (limit) => new UnavailableError(`${limit} requests are in progress on this connection`).with({ details: [retryInfo(RETRY_AFTER_MS)] }),
  closeAfter: () => undefined
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isRequestId = (id: unknown): id is string | number => typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))

const NOT_A_FRAME: Close = { code: CloseCode.A2AProtocolError, reason: 'not an a2a.v1 frame' }
const ID_REQUIRED = 'an a2a.v1 request needs an id, a string or a number'

/** The errors of a call after which an a2a.v1 connection does not go on. */
const CLOSES = new Map<ErrorRow, Close>([
  [errorTable.Unauthenticated, { code: CloseCode.AuthenticationRequired, reason: 'authentication required' }],
  [errorTable.VersionNotSupported, { code: CloseCode.VersionNotSupported, reason: 'version not supported' }]
])

/**
 * a2a.v1: JSON-RPC requests carrying an id and per-request `serviceParams`, `cancelStream`
 * control frames, `streamEnd` terminators. A message that is not a frame of the dialect
 * closes the connection: 1002 for bad JSON, 1003 for a binary frame, 4000 otherwise.
 */
export const a2aV1: Dialect = {
  binding: A2A_V1_BINDING,
  controlsStreams: true,

  read (text, maxJsonDepth) {
    const parsed = parseJson(text, maxJsonDepth)
    if (!parsed.ok) {
      return refused(null, parsed.error, parsed.error instanceof JsonParseError ? { code: CloseCode.ProtocolError, reason: 'invalid JSON' } : NOT_A_FRAME)
    }
    const message = parsed.value
    if (isObject(message) && message.cancelStream === true && !Object.hasOwn(message, 'method')) {
      if (message.jsonrpc !== '2.0' || !isRequestId(message.id)) return refused(null, new InvalidRequestError('cancelStream needs "jsonrpc":"2.0" and the id of a stream'), NOT_A_FRAME)
      return { kind: 'cancel', id: message.id }
    }
    const envelope = readEnvelope(message)
    if (!envelope.ok) {
      // Without an id nothing could refer to the request: it is no frame of this dialect.
      if (envelope.notification) return refused(null, new InvalidRequestError(ID_REQUIRED), NOT_A_FRAME)
      return refused(envelope.id, envelope.error, envelope.error instanceof InvalidRequestError ? NOT_A_FRAME : undefined)
    }
    const { request } = envelope
    if (!isRequestId(request.id)) return refused(null, new InvalidRequestError(ID_REQUIRED), NOT_A_FRAME)
    const raw = (message as Record<string, unknown>).serviceParams
    const serviceParams = raw === undefined ? {} : serviceParamsFromMap(raw)
    if (serviceParams === undefined) return refused(request.id, new InvalidRequestError('serviceParams must be an object of string values'), NOT_A_FRAME)
    return { kind: 'request', request, serviceParams }
  },

  binary: () => ({ kind: 'close', close: { code: CloseCode.UnsupportedData, reason: 'binary frames are not supported' } }),
  end: (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"streamEnd":true}`,
  busy: () => new TooManyStreamsError().with({ details: [retryInfo(RETRY_AFTER_MS)] }),
  closeAfter: (error, own) => {
    const close = CLOSES.get(error.row)
    if (close === undefined || own === undefined) return close
    // A refusal of what the call gave for itself is that call's: its version, or (any other
    // parameter it set may be what was refused) its credential. The connection's calls go on.
    const ownVersion = Object.hasOwn(own, 'a2a-version')
    const ownOther = Object.keys(own).some(name => name !== 'a2a-version' && name !== 'a2a-extensions')
    return (error.row === errorTable.VersionNotSupported ? ownVersion : ownOther) ? undefined : close
  }
}
