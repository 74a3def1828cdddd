// The seed-000 dialect: one JSON-RPC 2.0 object per text frame, no subprotocol (§1, §3);
// a stream is success frames for its id closed by {"status":"stream_complete"} or ended
// by an error frame (§4). It has no in-band way to stop a stream: a client that stops
// reading can only drop the stream's later frames until its end arrives. Service
// parameters are the upgrade's only (§2).
import { isObject, readFrame, type Dialect } from './dialect.js'

export const WEBSOCKET_BINDING_URI = 'https://a2a-rust.com/bindings/websocket/v1'

function isStreamComplete (result: unknown): boolean {
  return isObject(result) && result.status === 'stream_complete' && Object.keys(result).length === 1
}

export const seed000: Dialect = {
  binding: WEBSOCKET_BINDING_URI,
  subprotocol: '',
  maxPending: 64,
  perRequestParams: false,

  request (id, method, params) {
    return JSON.stringify({ jsonrpc: '2.0', id, method, params })
  },

  read: (text) => readFrame(text, (message) => Object.hasOwn(message, 'result') && isStreamComplete(message.result))
}
