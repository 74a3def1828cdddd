// fastify-a2a: one Fastify instance serving an A2A v1.0 agent.
export { a2aWebSocket, a2aWebSocket as default, AGENT_CARD_PATH, type A2ADecorator } from './plugin.js'
export { InvalidOptionError, type A2APluginOptions, type ExtendedCardProvider } from './options.js'
export * from './errors/index.js'
export * from './schema/wire.js'
export * from './schema/requests.js'
export { compile, type FieldViolation, type Validator } from './schema/validate.js'
export type * from './handler/executor.js'
export { RequestHandler, projectTask, type RequestHandlerOptions } from './handler/request-handler.js'
export { isInterrupted, isTerminal } from './handler/states.js'
export { MemoryTaskStore, MemoryPushConfigStore, type MemoryTaskStoreOptions } from './store/memory.js'
export type * from './store/types.js'
export { failUnfinishedTasks, RECOVERY_MESSAGE } from './store/recovery.js'
export { PushSender, PUSH_DEFAULTS, type PushOptions, type PushDeliveryReport, type PushOutcome } from './push/sender.js'
export { isBlockedAddress, WebhookGuard, WebhookRefusedError, type Resolver, type ResolvedAddress } from './push/ssrf.js'
export {
  openSqliteStores, migrateSqlite, SqliteTaskStore, SqlitePushConfigStore, type SqliteStoreOptions, type SqliteStores
} from './store/sqlite.js'
export {
  openPostgresStores, migratePostgres, PostgresTaskStore, PostgresPushConfigStore, type PostgresStoreOptions, type PostgresStores
} from './store/postgres.js'
export { MemoryEventBus } from './bus/memory.js'
export type * from './bus/types.js'
export { JSONRPC_BINDING } from './dispatcher/jsonrpc.js'
export { REST_BINDING } from './dispatcher/rest.js'
export { PROTOCOL_VERSION } from './dispatcher/card.js'
export { WEBSOCKET_BINDING_URI, STREAM_COMPLETE, makeWebSocketServer, type WebSocketLike, type WebSocketServer, type Connection, type ConnectionInfo } from './dispatcher/websocket-connection.js'
export type { CallInterceptor } from './dispatcher/call.js'
export type { WebSocketOptions } from './options.js'
