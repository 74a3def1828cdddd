// A2A errors as `@fastify/error` classes built from the one table, and the renderers
// that turn any error into a binding's shape. Throw these anywhere below a dispatcher
// (executors included); only dispatchers render them.
import { STATUS_CODES } from 'node:http'
import createError, { type FastifyError } from '@fastify/error'
import type { FieldViolation } from '../schema/validate.js'
import type { TaskState } from '../schema/wire.js'
import { A2A_DOMAIN, BINDING_DOMAIN, errorTable, type ErrorName, type ErrorRow } from './table.js'

export { A2A_DOMAIN, BINDING_DOMAIN, errorTable, type ErrorName, type ErrorRow } from './table.js'

const TYPE_PREFIX = 'type.googleapis.com/google.rpc.'

export type ErrorDetail = { '@type': string, [key: string]: unknown }

export interface ErrorExtras {
  /** ErrorInfo metadata (string values, as google.rpc.ErrorInfo requires). */
  metadata?: Record<string, string>
  /** Further typed details (BadRequest, RetryInfo, …). */
  details?: ErrorDetail[]
  cause?: unknown
}

export interface A2AError extends FastifyError {
  readonly row: ErrorRow
  metadata?: Record<string, string>
  details?: ErrorDetail[]
  /** Attaches ErrorInfo metadata and extra details; returns the error itself. */
  with (extras: ErrorExtras): this
}

export interface A2AErrorConstructor {
  new (...args: unknown[]): A2AError
  (...args: unknown[]): A2AError
  readonly prototype: A2AError
}

/** The base every A2A error class shares, so `err instanceof A2AErrorBase` finds them all. */
export class A2AErrorBase extends Error {
  declare readonly row: ErrorRow
  declare metadata?: Record<string, string>
  declare details?: ErrorDetail[]

  with (extras: ErrorExtras): this {
    if (extras.metadata !== undefined) this.metadata = { ...this.metadata, ...extras.metadata }
    if (extras.details !== undefined) this.details = [...(this.details ?? []), ...extras.details]
    if (extras.cause !== undefined) this.cause = extras.cause
    return this
  }
}

function define (name: ErrorName): A2AErrorConstructor {
  const row: ErrorRow = errorTable[name]
  const ErrorClass = createError(row.code, row.message, row.httpStatus, A2AErrorBase as unknown as ErrorConstructor)
  Object.defineProperty(ErrorClass.prototype, 'row', { value: row, enumerable: false })
  return ErrorClass as unknown as A2AErrorConstructor
}

export const TaskNotFoundError = define('TaskNotFound')
export const TaskNotCancelableError = define('TaskNotCancelable')
export const PushNotificationNotSupportedError = define('PushNotificationNotSupported')
export const UnsupportedOperationError = define('UnsupportedOperation')
export const ContentTypeNotSupportedError = define('ContentTypeNotSupported')
export const InvalidAgentResponseError = define('InvalidAgentResponse')
export const ExtendedAgentCardNotConfiguredError = define('ExtendedAgentCardNotConfigured')
export const ExtensionSupportRequiredError = define('ExtensionSupportRequired')
export const VersionNotSupportedError = define('VersionNotSupported')
export const JsonParseError = define('JsonParse')
export const InvalidRequestError = define('InvalidRequest')
export const MethodNotFoundError = define('MethodNotFound')
export const InvalidParamsError = define('InvalidParams')
export const InternalError = define('Internal')
export const PayloadTooLargeError = define('PayloadTooLarge')
export const UnsupportedMediaTypeError = define('UnsupportedMediaType')
export const UnauthenticatedError = define('Unauthenticated')
export const PermissionDeniedError = define('PermissionDenied')
export const RateLimitedError = define('RateLimited')
export const OriginNotAllowedError = define('OriginNotAllowed')
export const UnavailableError = define('Unavailable')
export const StreamLaggedError = define('StreamLagged')
export const TooManyStreamsError = define('TooManyStreams')
export const MessageRateLimitedError = define('MessageRateLimited')

/**
 * A task store's refusal to change a task in a terminal state: nothing leaves one, and another
 * process sharing the store ended it first. On the wire it is UnsupportedOperation.
 */
export class TaskTerminalError extends (UnsupportedOperationError as unknown as new (detail: string) => A2AError) {
  readonly taskId: string
  readonly state: TaskState

  constructor (taskId: string, state: TaskState) {
    super(`task ${taskId} is in terminal state ${state}`)
    this.taskId = taskId
    this.state = state
    this.with({ metadata: { taskId, state } })
  }
}

export function isA2AError (error: unknown): error is A2AError {
  return error instanceof A2AErrorBase
}

export function badRequest (violations: FieldViolation[]): ErrorDetail {
  return { '@type': `${TYPE_PREFIX}BadRequest`, fieldViolations: violations }
}

export function retryInfo (delayMs: number): ErrorDetail {
  return { '@type': `${TYPE_PREFIX}RetryInfo`, retryDelay: `${Math.max(0, delayMs) / 1000}s` }
}

/** How long a client waits before trying again when the server shuts down: another instance, or this one restarted, answers then. */
const SHUTDOWN_RETRY_MS = 1000

/** The refusal of a call, a stream or an upgrade while the server shuts down: worth another attempt, as its RetryInfo says. */
export function shuttingDown (): A2AError {
  return new UnavailableError('the server is shutting down').with({ details: [retryInfo(SHUTDOWN_RETRY_MS)] })
}

/** Invalid params with a BadRequest detail naming every failing field. */
export function invalidParams (violations: FieldViolation[]): A2AError {
  const summary = violations.map(v => v.field === '' ? v.description : `${v.field} ${v.description}`).join('; ')
  return new InvalidParamsError(summary).with({ details: [badRequest(violations)] })
}

/**
 * Codes of a store (or another service) that cannot be reached for now: the socket's, and
 * PostgreSQL's connection exceptions (class 08), shutdowns (57P01–57P03) and too many
 * connections (53300); SQLite's busy database (and its extended codes, SQLITE_BUSY_*). Worth
 * another attempt, unlike a fault.
 */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', '53300', 'SQLITE_BUSY'])
const UNREACHABLE_RETRY_MS = 1000

/**
 * pg's own errors that set no code: a connection lost or never made, a pool with none free in
 * time, a statement unanswered past its query_timeout; ioredis's: a command whose retries ran
 * out while Redis was out of reach (MaxRetriesPerRequestError), or one on a connection lost or closed.
 */
const UNREACHABLE_MESSAGE = /^(Connection terminated unexpectedly|Connection terminated due to connection timeout|timeout exceeded when trying to connect|Query read timeout|Reached the max retries per request limit|Connection is closed\.$)/

/** Is `error` a service out of reach for now (toA2AError makes it Unavailable)? */
export function isUnreachable (error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown, message?: unknown }
  return !isA2AError(error) && unreachable(code, message)
}

function unreachable (code: unknown, message: unknown): boolean {
  if (typeof code === 'string') return UNREACHABLE.has(code) || /^(08[0-9A-Z]{3}|SQLITE_BUSY_[A-Z]+)$/.test(code)
  return typeof message === 'string' && UNREACHABLE_MESSAGE.test(message)
}

/**
 * Any thrown value as an A2A error. Errors of our table pass through; Fastify's own
 * body errors map to their rows; anything else is an internal error whose message is
 * not shown to the client.
 */
export function toA2AError (error: unknown, bodyLimit?: number): A2AError {
  if (isA2AError(error)) return error
  const { code, message } = (error ?? {}) as { code?: unknown, message?: unknown }
  const bodyError = fastifyBodyError(code, bodyLimit)
  if (bodyError !== undefined) return bodyError
  if (unreachable(code, message)) {
    return new UnavailableError('a service the agent needs cannot be reached').with({ cause: error, details: [retryInfo(UNREACHABLE_RETRY_MS)] })
  }
  return new InternalError().with({ cause: error })
}

function fastifyBodyError (code: unknown, bodyLimit: number | undefined): A2AError | undefined {
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new PayloadTooLargeError(bodyLimit)
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || code === 'FST_ERR_CTP_INVALID_JSON_BODY') return new JsonParseError()
}

/** The table's error for a refusal's HTTP status; any other 4xx is InvalidRequest. */
const REFUSALS: Partial<Record<number, A2AErrorConstructor>> = {
  401: UnauthenticatedError, 403: PermissionDeniedError, 413: PayloadTooLargeError, 415: UnsupportedMediaTypeError, 429: RateLimitedError
}

/** Retry-After (RFC 9110 §10.2.3), seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs (value: unknown, now = Date.now()): number | undefined {
  if (value === undefined || value === null) return undefined
  const text = String(value).trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * An error raised before an HTTP call is served, by a Fastify hook of the application or of
 * a plugin (@fastify/rate-limit's 429), as its route's error handler gets it. One that is no
 * A2A error and carries a 4xx `statusCode` is a refusal: the table's error for that status,
 * with the error's own message (Fastify, too, shows a 4xx's message to the client); a 429
 * takes the RetryInfo of the reply's Retry-After, a 401 the reply's challenge. Anything
 * else is toA2AError's. The call's own errors (an executor's, an interceptor's) are not
 * read so: a downstream service's 401 is no refusal of the caller.
 */
export function toRefusal (error: unknown, reply: { getHeader (name: string): unknown }, bodyLimit?: number): A2AError {
  const { code, statusCode, message } = (error ?? {}) as { code?: unknown, statusCode?: unknown, message?: unknown }
  if (isA2AError(error) || typeof statusCode !== 'number' || statusCode < 400 || statusCode > 499 || fastifyBodyError(code, bodyLimit) !== undefined) {
    return toA2AError(error, bodyLimit)
  }
  const refusal = new (REFUSALS[statusCode] ?? InvalidRequestError)().with({ cause: error })
  refusal.message = typeof message === 'string' && message !== '' ? message : STATUS_CODES[statusCode] ?? 'Request refused'
  const challenge = reply.getHeader('www-authenticate')
  if (statusCode === 401 && typeof challenge === 'string') refusal.with({ metadata: { 'www-authenticate': challenge } })
  const delay = statusCode === 429 ? retryAfterMs(reply.getHeader('retry-after')) : undefined
  if (delay !== undefined) refusal.with({ details: [retryInfo(delay)] })
  return refusal
}

/** The `details` / `data` array: ErrorInfo first for A2A errors, last for binding refusals (seed 000 §6). */
export function errorDetails (error: A2AError): ErrorDetail[] {
  const extra = error.details ?? []
  const { reason, domain } = error.row
  if (reason === undefined) return extra
  const info: ErrorDetail = { '@type': `${TYPE_PREFIX}ErrorInfo`, reason, domain: domain ?? A2A_DOMAIN }
  if (error.metadata !== undefined) info.metadata = error.metadata
  return domain === BINDING_DOMAIN ? [...extra, info] : [info, ...extra]
}

/**
 * HTTP headers that go with the error on the HTTP bindings: the challenge of a refused
 * credential (WWW-Authenticate) and the delay of a RetryInfo detail (Retry-After, seconds).
 */
export function errorHeaders (error: A2AError): Record<string, string> {
  const headers: Record<string, string> = {}
  const challenge = error.metadata?.['www-authenticate']
  if (challenge !== undefined) headers['www-authenticate'] = challenge
  const retry = error.details?.find(detail => detail['@type'] === `${TYPE_PREFIX}RetryInfo`)
  if (typeof retry?.retryDelay === 'string') headers['retry-after'] = String(Math.ceil(Number.parseFloat(retry.retryDelay)))
  return headers
}

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: ErrorDetail[]
}

export function toJsonRpcError (error: A2AError): JsonRpcErrorObject {
  const data = errorDetails(error)
  const rendered: JsonRpcErrorObject = { code: error.row.jsonRpcCode, message: error.message }
  if (data.length > 0) rendered.data = data
  return rendered
}

export interface RestErrorBody {
  error: { code: number, status: string, message: string, details?: ErrorDetail[] }
}

/** The HTTP+JSON binding's error body (google.rpc.Status JSON, spec §11.6). */
export function toRestError (error: A2AError): RestErrorBody {
  const details = errorDetails(error)
  const body: RestErrorBody = { error: { code: error.row.httpStatus, status: error.row.grpcStatus, message: error.message } }
  if (details.length > 0) body.error.details = details
  return body
}
