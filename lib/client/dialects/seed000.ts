// The seed-000 dialect: one JSON-RPC 2.0 object per text frame, no subprotocol (§1, §3);
// a stream is success frames for its id closed by {"status":"stream_complete"} or ended
// by an error frame (§4). It has no in-band way to stop a stream: a client that stops
// reading can only drop the stream's later frames until its end arrives.
import type { JsonRpcErrorObject } from '../errors.js'
import type { Dialect, Frame } from './dialect.js'

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function isStreamComplete (result: unknown): boolean {
  return isObject(result) && result.status === 'stream_complete' && Object.keys(result).length === 1
}

export const seed000: Dialect = {
  subprotocols: [],

  request (id, method, params) {
    return JSON.stringify({ jsonrpc: '2.0', id, method, params })
  },

  read (text): Frame {
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch {
      return { kind: 'unreadable' }
    }
    if (!isObject(message) || message.jsonrpc !== '2.0') return { kind: 'unreadable' }
    const { id } = message
    const { error } = message
    if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string' && (typeof id === 'string' || id === null)) {
      return { kind: 'error', id, error: error as unknown as JsonRpcErrorObject }
    }
    if (typeof id !== 'string' || !Object.hasOwn(message, 'result')) return { kind: 'unreadable' }
    return isStreamComplete(message.result) ? { kind: 'complete', id } : { kind: 'result', id, result: message.result }
  }
}
