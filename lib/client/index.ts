// fastify-a2a/client: an A2A v1.0 client for Node and browsers, over WebSocket (seed 000
// or the a2a.v1 dialect), JSON-RPC and HTTP+JSON, and a reconnect helper. Nothing here
// imports Fastify or a Node built-in; the A2A types come from the wire schemas as types only.
export { A2AClient, type A2AClientOptions } from './client.js'
export {
  AGENT_CARD_PATH, NoSupportedInterfaceError, createClient, createTransport, defaultPreferences, fetchAgentCard, selectInterface,
  type ClientFactoryOptions
} from './factory.js'
export {
  A2AClientError, AuthenticationRequiredError, BINDING_DOMAIN, CallTimeoutError, ClientError, ConnectionError, InvalidResponseError,
  StreamIncompleteError, SubprotocolMismatchError, TooManyPendingError, UnexpectedStatusError, UnsupportedVersionError,
  type ErrorDetail, type JsonRpcErrorObject, type RestErrorBody
} from './errors.js'
export { isReconnectable, reconnect, reconnectDelay, resumeStream, type ReconnectOptions, type ResumeOptions } from './reconnect.js'
export { A2A_VERSION, type CallOptions, type StreamMethod, type Transport, type TransportOptions, type UnaryMethod } from './transport.js'
export { WEBSOCKET_BINDING_URI, WebSocketTransport, type WebSocketDialectName, type WebSocketTransportOptions } from './transports/websocket.js'
export { A2A_V1_BINDING, A2A_V1_SUBPROTOCOL } from './dialects/a2a-v1.js'
export { JSONRPC_BINDING, JsonRpcTransport } from './transports/jsonrpc.js'
export { REST_BINDING, RestTransport } from './transports/rest.js'
export type { HttpTransportOptions } from './transports/http.js'
export type { WebSocketConstructor, WebSocketLike } from './websocket-runtime.js'
export type { Dialect, Frame } from './dialects/dialect.js'
export type * from '../schema/wire.js'
export type * from '../schema/requests.js'
