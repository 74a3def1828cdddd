// The interceptor chain: one definition serves every binding. It runs around every call
// (every JSON-RPC or REST request, every WebSocket frame) and can refuse it, enrich its
// context, and observe how it ended.
import type { FastifyRequest } from 'fastify'
import type { A2AError } from '../errors/index.js'
import type { CallContext } from '../handler/executor.js'
import type { ServiceParams } from '../service-params.js'

export interface InterceptedCall {
  /**
   * The params as sent (an interceptor may replace them); they are validated after the chain
   * runs. Their `tenant` is read into `context.tenant` before it, and not again.
   */
  params: unknown
  /** The HTTP request of the call; over WebSocket, the upgrade request of its connection. */
  request?: FastifyRequest
}

export type CallOutcome =
  | { status: 'succeeded' }
  | { status: 'failed', error: A2AError }
  /** The client left before the call finished (a stream it stopped reading, a dropped connection). */
  | { status: 'cancelled' }

export interface A2AInterceptor {
  /**
   * Before every call. Throw an A2A error to refuse it (UnauthenticatedError with a
   * `www-authenticate` metadata entry, PermissionDeniedError, RateLimitedError…); set
   * `context.identity`, `context.scopes` or `context.tenant` to enrich it. `context.tenant`
   * is the tenant the call names on every binding (the REST path's, else the params' `tenant`,
   * `''` for none), as the interceptors before this one left it; what the chain leaves is the
   * call's tenant, `''` included.
   */
  before? (context: CallContext, call: InterceptedCall): void | Promise<void>
  /** Exactly once per call that reached the chain, with its outcome. */
  onComplete? (context: CallContext, outcome: CallOutcome, call: InterceptedCall): void | Promise<void>
  /**
   * At a WebSocket upgrade, before the 101: throw an A2A error to refuse the connection
   * with its HTTP status and the HTTP+JSON error body.
   */
  onUpgrade? (request: FastifyRequest, serviceParams: Readonly<ServiceParams>): void | Promise<void>
}
