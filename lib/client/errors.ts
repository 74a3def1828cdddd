// The errors a client call can fail with, and how each binding's error shapes map onto
// them (seed 000 §6): an A2A / JSON-RPC error is an `A2AClientError`; a refused upgrade,
// an HTTP 401/403, and the WebSocket binding's UNAUTHENTICATED / PERMISSION_DENIED frame
// are all an `UnexpectedStatusError` with the HTTP status, whatever the binding. A closed
// WebSocket fails the calls still on it by close code (closeError): seed 001's 4001 and
// 4002 have classes of their own.

const TYPE_PREFIX = 'type.googleapis.com/google.rpc.'
/** The WebSocket binding's own ErrorInfo domain (seed 000 §5, §6). */
export const BINDING_DOMAIN = 'a2a-rust.com'

/** Seed 001's close codes with a class of their own. */
const CLOSE_AUTHENTICATION_REQUIRED = 4001
const CLOSE_VERSION_NOT_SUPPORTED = 4002

export type ErrorDetail = { '@type': string, [key: string]: unknown }

/** A JSON-RPC error object, as the JSON-RPC and WebSocket bindings send it. */
export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
}

/** The HTTP+JSON binding's error body (google.rpc.Status JSON, spec §11.6). */
export interface RestErrorBody {
  error: { code: number, status: string, message: string, details?: ErrorDetail[] }
}

/** The base of every error this client throws (an abort rethrows the signal's reason instead). */
export class ClientError extends Error {
  /** Would the same call, made again (on a new connection), have a chance to succeed? */
  readonly retryable: boolean

  constructor (message: string, retryable: boolean, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.retryable = retryable
  }
}

/** The agent answered the call with an A2A or JSON-RPC error. */
export class A2AClientError extends ClientError {
  /** The JSON-RPC code (-32001 TaskNotFound, …); on HTTP+JSON derived from the ErrorInfo reason. */
  readonly code: number
  /** ErrorInfo reason (`TASK_NOT_FOUND`), when the error carries one. */
  readonly reason: string | undefined
  /** ErrorInfo domain (`a2a-protocol.org`). */
  readonly domain: string | undefined
  /** ErrorInfo metadata. */
  readonly metadata: Record<string, string>
  /** Every typed detail as sent (ErrorInfo, BadRequest, RetryInfo, …). */
  readonly details: ErrorDetail[]
  /** The HTTP status, on the HTTP bindings. */
  readonly httpStatus: number | undefined
  /** The delay a RetryInfo detail asks for, in ms. */
  readonly retryDelayMs: number | undefined

  constructor (code: number, message: string, details: ErrorDetail[], httpStatus?: number) {
    const info = errorInfo(details)
    const retryDelayMs = retryDelay(details)
    super(message, retryDelayMs !== undefined)
    this.code = code
    this.reason = info?.reason
    this.domain = info?.domain
    this.metadata = info?.metadata ?? {}
    this.details = details
    this.httpStatus = httpStatus
    this.retryDelayMs = retryDelayMs
  }
}

/**
 * The agent (or a gateway in front of it) refused with an HTTP status: a refused WebSocket
 * upgrade, an HTTP 401/403, or the WebSocket binding's UNAUTHENTICATED (401) /
 * PERMISSION_DENIED (403) frame, which stands for the status an upgraded connection cannot send.
 */
export class UnexpectedStatusError extends ClientError {
  readonly status: number
  /** The parsed body (the REST error body, or the JSON-RPC error object of a refusal frame); the text when it is not JSON. */
  readonly body: unknown
  /** The challenge: the WWW-Authenticate header, or the refusal frame's `www-authenticate` metadata. */
  readonly wwwAuthenticate: string | undefined

  constructor (status: number, body: unknown, wwwAuthenticate?: string) {
    super(`the agent answered HTTP ${status}${describe(body)}`, status === 503 || status === 429)
    this.status = status
    this.body = body
    this.wwwAuthenticate = wwwAuthenticate
  }
}

/** The connection could not be opened, or it dropped before the answer came. */
export class ConnectionError extends ClientError {
  /** The WebSocket close code, when a WebSocket closed. */
  readonly closeCode: number | undefined

  constructor (message: string, options: { retryable?: boolean, closeCode?: number, cause?: unknown } = {}) {
    super(message, options.retryable ?? true, { cause: options.cause })
    this.closeCode = options.closeCode
  }
}

/** A stream that stopped before its end: the connection dropped mid-way. Resubscribe to continue. */
export class StreamIncompleteError extends ConnectionError {
  /** The task the stream was about, when an event named it. */
  readonly taskId: string | undefined
  /** Events received before the cut. */
  readonly received: number

  constructor (message: string, taskId: string | undefined, received: number, options: { retryable?: boolean, closeCode?: number, cause?: unknown } = {}) {
    super(message, options)
    this.taskId = taskId
    this.received = received
  }
}

/**
 * The a2a.v1 connection was closed with 4001 (seed 001): the agent no longer accepts its
 * credential. The call that was refused got its own error (an UnexpectedStatusError 401);
 * every other call on the connection fails with this. Not retryable: authenticate again.
 */
export class AuthenticationRequiredError extends ConnectionError {
  constructor (message: string) {
    super(message, { retryable: false, closeCode: CLOSE_AUTHENTICATION_REQUIRED })
  }
}

/**
 * The a2a.v1 connection was closed with 4002 (seed 001): a call asked for an A2A version
 * the agent does not support. That call got its own A2AClientError (-32009); every other
 * call on the connection fails with this. Not retryable.
 */
export class UnsupportedVersionError extends ConnectionError {
  constructor (message: string) {
    super(message, { retryable: false, closeCode: CLOSE_VERSION_NOT_SUPPORTED })
  }
}

/**
 * The server accepted the upgrade (101) without selecting the subprotocol the dialect needs (or
 * selected another): it does not speak that dialect at this URL. Not retryable.
 */
export class SubprotocolMismatchError extends ConnectionError {
  /** The subprotocol offered; '' for none (seed 000). */
  readonly expected: string
  /** The one the server selected; '' for none. */
  readonly selected: string

  constructor (url: string, expected: string, selected: string) {
    const what = (name: string) => name === '' ? 'no subprotocol' : `the subprotocol ${name}`
    super(`${url} selected ${what(selected)} where ${what(expected)} was asked for: the agent does not speak this dialect there`, { retryable: false })
    this.expected = expected
    this.selected = selected
  }
}

/** The call's timeout passed before it finished. */
export class CallTimeoutError extends ClientError {
  constructor (readonly timeoutMs: number) {
    super(`the call did not finish within ${timeoutMs} ms`, true)
  }
}

/** The WebSocket connection already carries as many calls as allowed (option `maxPending`). */
export class TooManyPendingError extends ClientError {
  constructor (readonly limit: number) {
    super(`${limit} calls are already pending on this connection (a stream counts until it ends); wait for one to finish`, true)
  }
}

/** The agent's answer is not what the binding specifies. */
export class InvalidResponseError extends ClientError {
  constructor (message: string) {
    super(message, false)
  }
}

function describe (body: unknown): string {
  if (typeof body === 'string') return body === '' ? '' : `: ${body.slice(0, 200)}`
  const message = (body as { error?: { message?: unknown }, message?: unknown } | null)?.error?.message ?? (body as { message?: unknown } | null)?.message
  return typeof message === 'string' ? `: ${message}` : ''
}

function asDetails (data: unknown): ErrorDetail[] {
  return Array.isArray(data) ? data.filter((item): item is ErrorDetail => typeof item?.['@type'] === 'string') : []
}

interface ErrorInfo { reason?: string, domain?: string, metadata?: Record<string, string> }

function errorInfo (details: ErrorDetail[]): ErrorInfo | undefined {
  return details.find(detail => detail['@type'] === `${TYPE_PREFIX}ErrorInfo`) as ErrorInfo | undefined
}

function retryDelay (details: ErrorDetail[]): number | undefined {
  const info = details.find(detail => detail['@type'] === `${TYPE_PREFIX}RetryInfo`)
  const match = typeof info?.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(info.retryDelay) : null
  return match === null ? undefined : Number(match[1]) * 1000
}

/**
 * Closes after which the same call would fail again (RFC 6455 §7.4.1, seed 001): the agent
 * could not read what this client sent (1002 not JSON, 1003 binary, 4000 no frame of the
 * dialect) or it was too large (1009). Any other close (1001 going away, 1006 dropped, 1008
 * the message rate, 1011, 1013 try again later) leaves the call worth making again.
 */
const FINAL_CLOSES = new Set([1002, 1003, 1009, 4000])

/** What a stream had received when its connection closed. */
export interface StreamProgress {
  taskId: string | undefined
  received: number
}

/** The error of a call whose connection closed before its answer (`stream`: before its end), by close code. */
export function closeError (code: number, reason: string, stream?: StreamProgress): ConnectionError {
  const closed = `the connection closed (${reason === '' ? code : `${code} ${reason}`})`
  const before = stream === undefined ? 'before the answer arrived' : `after ${stream.received} events, before the stream ended`
  if (code === CLOSE_AUTHENTICATION_REQUIRED) return new AuthenticationRequiredError(`${closed} ${before}: the agent wants a new credential`)
  if (code === CLOSE_VERSION_NOT_SUPPORTED) return new UnsupportedVersionError(`${closed} ${before}: a call asked for an A2A version the agent does not support`)
  const options = { closeCode: code, retryable: !FINAL_CLOSES.has(code) }
  if (stream === undefined) return new ConnectionError(`${closed} ${before}`, options)
  return new StreamIncompleteError(`${closed} ${before}`, stream.taskId, stream.received, options)
}

/** The refusals of seed 000 §6: the HTTP status each one stands for. */
const REFUSAL_STATUS: Record<string, number> = { UNAUTHENTICATED: 401, PERMISSION_DENIED: 403 }

/** A JSON-RPC error (JSON-RPC and WebSocket bindings) as the client reports it. */
export function errorFromJsonRpc (error: JsonRpcErrorObject, httpStatus?: number): ClientError {
  const details = asDetails(error.data)
  // The refusal's ErrorInfo comes after any other the refusal carries (seed 000 §6).
  const binding = details.find(detail => detail['@type'] === `${TYPE_PREFIX}ErrorInfo` && detail.domain === BINDING_DOMAIN) as ErrorInfo | undefined
  const refusal = binding?.reason === undefined ? undefined : REFUSAL_STATUS[binding.reason]
  if (error.code === -32600 && refusal !== undefined) return new UnexpectedStatusError(refusal, error, binding?.metadata?.['www-authenticate'])
  return new A2AClientError(error.code, error.message, details, httpStatus)
}

/** JSON-RPC codes by ErrorInfo reason (spec §5.4): the same error has the same code on every binding. */
const CODE_BY_REASON: Record<string, number> = {
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
  UNSUPPORTED_OPERATION: -32004,
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  INVALID_AGENT_RESPONSE: -32006,
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: -32007,
  EXTENSION_SUPPORT_REQUIRED: -32008,
  VERSION_NOT_SUPPORTED: -32009,
  STREAM_LAGGED: -32603
}

/** A JSON-RPC code for an HTTP+JSON error without an A2A reason, from its google.rpc status. */
function codeByStatus (status: string, details: ErrorDetail[]): number {
  if (status === 'NOT_FOUND') return -32601
  if (status === 'INVALID_ARGUMENT') return details.some(detail => detail['@type'] === `${TYPE_PREFIX}BadRequest`) ? -32602 : -32600
  return -32603
}

function isRestErrorBody (body: unknown): body is RestErrorBody {
  const error = (body as RestErrorBody | null)?.error
  return typeof error === 'object' && error !== null && typeof error.message === 'string'
}

/** A non-2xx answer of an HTTP binding (or a refused upgrade's body) as the client reports it. */
export function errorFromRest (status: number, body: unknown, wwwAuthenticate?: string): ClientError {
  if (status === 401 || status === 403 || !isRestErrorBody(body)) {
    const details = isRestErrorBody(body) ? asDetails(body.error.details) : []
    return new UnexpectedStatusError(status, body, wwwAuthenticate ?? errorInfo(details)?.metadata?.['www-authenticate'])
  }
  const details = asDetails(body.error.details)
  const reason = errorInfo(details)?.reason
  const code = (reason === undefined ? undefined : CODE_BY_REASON[reason]) ?? codeByStatus(body.error.status, details)
  return new A2AClientError(code, body.error.message, details, status)
}

/** JSON text, parsed; the text itself when it is not JSON. */
export function parseBody (text: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
