// A WebSocket dialect: how requests and answers are framed on one connection. The
// transport (transports/websocket.ts) owns ids, pending calls and the socket; a dialect
// only turns a request into a frame and a frame into what it means for which request.
import type { JsonRpcErrorObject } from '../errors.js'

export type Frame =
  /** A unary call's result, or one event of a stream. */
  | { kind: 'result', id: string, result: unknown }
  /** The stream with this id is over (seed 000 §4's marker). */
  | { kind: 'complete', id: string }
  /** The call (or the stream) with this id failed; `id` is null for an error about no request. */
  | { kind: 'error', id: string | null, error: JsonRpcErrorObject }
  /** Not a frame of the dialect: ignored. */
  | { kind: 'unreadable' }

export interface Dialect {
  /** Subprotocols offered at the upgrade. */
  readonly subprotocols: readonly string[]
  request (id: string, method: string, params: object): string
  read (text: string): Frame
}
