// fastify-a2a: one Fastify instance serving an A2A v1.0 agent.
export { a2aWebSocket, a2aWebSocket as default, AGENT_CARD_PATH } from './plugin.js';
export { InvalidOptionError } from './options.js';
export * from './errors/index.js';
export * from './schema/wire.js';
export * from './schema/requests.js';
export { compile } from './schema/validate.js';
export { RequestHandler, projectTask } from './handler/request-handler.js';
export { isInterrupted, isTerminal } from './handler/states.js';
export { MemoryTaskStore, MemoryPushConfigStore } from './store/memory.js';
export { failUnfinishedTasks, RECOVERY_MESSAGE } from './store/recovery.js';
export { PushSender, PUSH_DEFAULTS } from './push/sender.js';
export { isBlockedAddress, WebhookGuard, WebhookRefusedError } from './push/ssrf.js';
export { openSqliteStores, migrateSqlite, SqliteTaskStore, SqlitePushConfigStore } from './store/sqlite.js';
export { openPostgresStores, migratePostgres, PostgresTaskStore, PostgresPushConfigStore } from './store/postgres.js';
export { MemoryEventBus } from './bus/memory.js';
export { JSONRPC_BINDING } from './dispatcher/jsonrpc.js';
export { REST_BINDING } from './dispatcher/rest.js';
export { PROTOCOL_VERSION } from './dispatcher/card.js';
export { canonicalize } from './card/jcs.js';
export { signAgentCard, verifyAgentCard, AgentCardSignatureError } from './card/signing.js';
export { WEBSOCKET_BINDING_URI, STREAM_COMPLETE, makeWebSocketServer } from './dispatcher/websocket-connection.js';
export { A2A_V1_BINDING, A2A_V1_SUBPROTOCOL, CloseCode } from './dispatcher/websocket-connection.js';
export { authentication } from './interceptors/auth.js';
export { rateLimit } from './interceptors/rate-limit.js';
export { tenancy } from './interceptors/tenancy.js';
export { RedisEventBus } from './bus/redis.js';
//# sourceMappingURL=index.js.map