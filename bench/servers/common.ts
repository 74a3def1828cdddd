import type { AddressInfo } from 'node:net'

/** What a bench server reports once it listens on 127.0.0.1. */
export interface StartedServer {
  port: number
}

/** The port a listening server was given (every bench server asks for port 0). */
export function startedOn (server: { address (): AddressInfo | string | null }): StartedServer {
  const address = server.address()
  return { port: typeof address === 'object' && address !== null ? address.port : 0 }
}

/** Where the peer mounts its two handlers (its JSON-RPC router must not see the REST routes). */
export const PEER_JSONRPC_PATH = '/jsonrpc'
export const PEER_REST_PATH = '/rest'

/** The bare Fastify server's second route: the P1 floor (servers/bare-fastify.ts). */
export const FLOOR_PATH = '/floor'
