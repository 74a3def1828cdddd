/** What a bench server reports once it listens on 127.0.0.1. */
export interface StartedServer {
  port: number
}

/** Where the peer mounts its two handlers (its JSON-RPC router must not see the REST routes). */
export const PEER_JSONRPC_PATH = '/jsonrpc'
export const PEER_REST_PATH = '/rest'

/** The bare Fastify server's second route: the P1 floor (servers/bare-fastify.ts). */
export const FLOOR_PATH = '/floor'
