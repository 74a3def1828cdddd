// The a2a.v1 dialect (seed 001), offered as the subprotocol `a2a.v1`: JSON-RPC 2.0 frames
// whose requests carry their own `serviceParams` (a flat map of strings, over the
// upgrade's for that call only); a stream is result frames for its id ended by
// {"jsonrpc":"2.0","id":…,"streamEnd":true} (or by an error frame), and the client stops
// one with {"jsonrpc":"2.0","id":…,"cancelStream":true}, answered by exactly one streamEnd.
import { readFrame, type Dialect } from './dialect.js'

/** The card's `protocolBinding` of an a2a.v1 interface. */
export const A2A_V1_BINDING = 'WEBSOCKET'
export const A2A_V1_SUBPROTOCOL = 'a2a.v1'

export const a2aV1: Dialect = {
  binding: A2A_V1_BINDING,
  subprotocol: A2A_V1_SUBPROTOCOL,
  // The server's `websocket.a2aV1.maxStreams` default.
  maxPending: 128,
  perRequestParams: true,

  request (id, method, params, serviceParams) {
    return JSON.stringify({ jsonrpc: '2.0', id, method, params, serviceParams })
  },

  cancel: (id) => JSON.stringify({ jsonrpc: '2.0', id, cancelStream: true }),

  // A streamEnd has no result.
  read: (text) => readFrame(text, (message) => message.streamEnd === true && !Object.hasOwn(message, 'result'))
}
