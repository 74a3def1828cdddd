// A WebSocket dialect: how requests and answers are framed on one connection. The
// transport (transports/websocket.ts) owns ids, pending calls and the socket; a dialect
// only turns a request into a frame and a frame into what it means for which request.
import type { JsonRpcErrorObject } from '../errors.js'

export type Frame =
  /** A unary call's result, or one event of a stream. */
  | { kind: 'result', id: string, result: unknown }
  /** The stream with this id is over (seed 000's marker, a2a.v1's streamEnd). */
  | { kind: 'complete', id: string }
  /** The call (or the stream) with this id failed; `id` is null for an error about no request. */
  | { kind: 'error', id: string | null, error: JsonRpcErrorObject }
  /** Not a frame of the dialect: ignored. */
  | { kind: 'unreadable' }

export interface Dialect {
  /** The card's `protocolBinding` of the interfaces that speak this dialect. */
  readonly binding: string
  /** The subprotocol offered at the upgrade, which the server must select; '' for none. */
  readonly subprotocol: string
  /** The server's default limit of calls in progress on one connection (a stream counts until it ends). */
  readonly maxPending: number
  /** Does a request carry service parameters of its own? Without, there are only the upgrade's. */
  readonly perRequestParams: boolean
  /** `serviceParams`: the request's own, when the dialect carries them. */
  request (id: string, method: string, params: object, serviceParams?: Record<string, string>): string
  /** The frame that stops the stream in progress with this id; absent when the dialect has none. */
  cancel?: (id: string) => string
  read (text: string): Frame
}

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * What both dialects read alike: one JSON-RPC 2.0 object per text frame, an error for an
 * id (or for none), else a result for an id, unless `isEnd` says it ends a stream.
 */
export function readFrame (text: string, isEnd: (message: Record<string, unknown>) => boolean): Frame {
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    return { kind: 'unreadable' }
  }
  if (!isObject(message) || message.jsonrpc !== '2.0') return { kind: 'unreadable' }
  const { id, error } = message
  if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string' && (typeof id === 'string' || id === null)) {
    return { kind: 'error', id, error: error as unknown as JsonRpcErrorObject }
  }
  if (typeof id !== 'string') return { kind: 'unreadable' }
  if (isEnd(message)) return { kind: 'complete', id }
  return Object.hasOwn(message, 'result') ? { kind: 'result', id, result: message.result } : { kind: 'unreadable' }
}
