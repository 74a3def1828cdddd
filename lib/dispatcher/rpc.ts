// JSON-RPC 2.0 envelopes, shared by the JSON-RPC HTTP binding and the WebSocket
// binding (which carries the same messages over one connection).
import {
  InvalidRequestError, MethodNotFoundError, invalidParams, toJsonRpcError, type A2AError, type JsonRpcErrorObject
} from '../errors/index.js'
import { DEFAULT_MAX_JSON_DEPTH, parseJson } from '../json-guard.js'
import { methods, type MethodSpec } from './call.js'

export type JsonRpcId = string | number | null

export interface JsonRpcRequest {
  /** Absent for a notification. */
  id?: JsonRpcId
  method: MethodSpec
  params: unknown
}

export type Envelope =
  | { ok: true, request: JsonRpcRequest }
  /** `notification`: a well-formed request without an id, which gets no answer even when it fails. */
  | { ok: false, id: JsonRpcId, error: A2AError, notification: boolean }

const isValidId = (id: unknown): id is JsonRpcId => id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))

/** Parses one JSON-RPC message from its text: the one JSON.parse of the request, after the depth guard. */
export function parseEnvelope (text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): Envelope {
  const parsed = parseJson(text, maxDepth)
  if (!parsed.ok) return { ok: false, id: null, error: parsed.error, notification: false }
  return readEnvelope(parsed.value)
}

/** Checks the envelope (spec §9, JSON-RPC 2.0 §4) and looks the method up. */
export function readEnvelope (value: unknown): Envelope {
  const invalid = (id: JsonRpcId, reason: string): Envelope => ({ ok: false, id, error: new InvalidRequestError(reason), notification: false })
  if (Array.isArray(value)) return invalid(null, 'batch requests are not supported')
  if (value === null || typeof value !== 'object') return invalid(null, 'a request must be a JSON object')
  const message = value as Record<string, unknown>
  const hasId = Object.hasOwn(message, 'id')
  if (hasId && !isValidId(message.id)) return invalid(null, 'id must be a string, a number or null')
  const id = hasId ? message.id as JsonRpcId : null
  if (message.jsonrpc !== '2.0') return invalid(id, 'jsonrpc must be "2.0"')
  if (typeof message.method !== 'string') return invalid(id, 'method must be a string')
  const spec = methods.get(message.method)
  if (spec === undefined) return { ok: false, id, error: new MethodNotFoundError(message.method), notification: !hasId }
  const params = message.params
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    return { ok: false, id, error: invalidParams([{ field: 'params', description: 'must be an object' }]), notification: !hasId }
  }
  const request: JsonRpcRequest = { method: spec, params }
  if (hasId) request.id = id
  return { ok: true, request }
}

/** A success response around a result already serialised (`MethodSpec.serialize`). */
export function successOf (id: JsonRpcId, resultJson: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`
}

export function failure (id: JsonRpcId, error: A2AError): string {
  return JSON.stringify(failureObject(id, error))
}

export function failureObject (id: JsonRpcId, error: A2AError): { jsonrpc: '2.0', id: JsonRpcId, error: JsonRpcErrorObject } {
  return { jsonrpc: '2.0', id, error: toJsonRpcError(error) }
}
