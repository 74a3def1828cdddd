// Making a client from an agent's address: read its card (spec §8.2), pick the first
// interface of the preference list it offers, and open the matching transport. The
// WebSocket binding's two dialects are two interfaces of the card: seed 000 under its URI,
// a2a.v1 as `WEBSOCKET`.
import type { AgentCard, AgentInterface } from '../schema/wire.js'
import { A2AClient } from './client.js'
import { A2A_V1_BINDING } from './dialects/a2a-v1.js'
import { ClientError, ConnectionError, UnexpectedStatusError, parseBody } from './errors.js'
import type { Transport, TransportOptions } from './transport.js'
import { JSONRPC_BINDING, JsonRpcTransport } from './transports/jsonrpc.js'
import { REST_BINDING, RestTransport } from './transports/rest.js'
import { WEBSOCKET_BINDING_URI, WebSocketTransport } from './transports/websocket.js'
import { hasWebSocket, type WebSocketConstructor } from './websocket-runtime.js'

export const AGENT_CARD_PATH = '/.well-known/agent-card.json'

export interface ClientFactoryOptions extends TransportOptions {
  /**
   * `protocolBinding`s in the order to try them. Default: WebSocket (seed 000) first when
   * the runtime has a WebSocket or one is injected, then JSON-RPC, then HTTP+JSON. Name
   * `WEBSOCKET` for the a2a.v1 dialect.
   */
  preferences?: string[]
  /** Use this card instead of fetching one. */
  card?: AgentCard
  /** For the WebSocket transport: a WebSocket class to use instead of the runtime's. */
  WebSocket?: WebSocketConstructor
  /** For the card and the HTTP transports: a fetch to use instead of the global one. */
  fetch?: typeof fetch
  /** For the HTTP transports: the largest event of a stream (HttpTransportOptions). */
  maxEventSize?: number
  /** For the WebSocket transport. */
  maxPending?: number
  /** For the WebSocket transport. */
  connectTimeout?: number
}

/** The version this client speaks: an interface of another major version is passed over. */
const SUPPORTED_VERSION = /^1(\.|$)/

export class NoSupportedInterfaceError extends ClientError {
  constructor (offered: string[], preferences: string[]) {
    super(`the agent offers ${offered.join(', ') || 'no interface'}; this client speaks ${preferences.join(', ')} (A2A 1.x)`, false)
  }
}

export function defaultPreferences (injected?: WebSocketConstructor): string[] {
  return hasWebSocket(injected) ? [WEBSOCKET_BINDING_URI, JSONRPC_BINDING, REST_BINDING] : [JSONRPC_BINDING, REST_BINDING]
}

/** `agentUrl` is the agent's address (its card is at the host root) or the card's own URL. */
export async function fetchAgentCard (agentUrl: string | URL, fetchFn: typeof fetch = (input, init) => globalThis.fetch(input, init)): Promise<AgentCard> {
  const url = new URL(agentUrl)
  const cardUrl = url.pathname.endsWith('.json') ? url : new URL(AGENT_CARD_PATH, url)
  let response: Response
  try {
    response = await fetchFn(cardUrl, { headers: { accept: 'application/json' } })
  } catch (error) {
    throw new ConnectionError(`could not fetch the agent card at ${cardUrl.href}`, { cause: error })
  }
  const body = parseBody(await response.text())
  if (!response.ok) throw new UnexpectedStatusError(response.status, body, response.headers.get('www-authenticate') ?? undefined)
  return body as AgentCard
}

export function selectInterface (card: AgentCard, preferences: string[]): AgentInterface {
  // A card of another protocol version (0.3 has none) offers no interface this client speaks.
  const offered = Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : []
  const usable = offered.filter(candidate => SUPPORTED_VERSION.test(candidate.protocolVersion))
  for (const binding of preferences) {
    const chosen = usable.find(candidate => candidate.protocolBinding === binding)
    if (chosen !== undefined) return chosen
  }
  throw new NoSupportedInterfaceError(offered.map(i => `${i.protocolBinding} ${i.protocolVersion}`), preferences)
}

export function createTransport (agentInterface: AgentInterface, options: ClientFactoryOptions = {}): Transport {
  const common = { url: agentInterface.url, serviceParams: options.serviceParams, timeout: options.timeout }
  switch (agentInterface.protocolBinding) {
    case WEBSOCKET_BINDING_URI:
    case A2A_V1_BINDING: {
      const dialect = agentInterface.protocolBinding === A2A_V1_BINDING ? 'a2a.v1' : 'seed000'
      return new WebSocketTransport({ ...common, dialect, WebSocket: options.WebSocket, maxPending: options.maxPending, connectTimeout: options.connectTimeout })
    }
    case JSONRPC_BINDING:
      return new JsonRpcTransport({ ...common, fetch: options.fetch, maxEventSize: options.maxEventSize })
    case REST_BINDING:
      return new RestTransport({ ...common, fetch: options.fetch, maxEventSize: options.maxEventSize })
    default:
      throw new NoSupportedInterfaceError([agentInterface.protocolBinding], [WEBSOCKET_BINDING_URI, A2A_V1_BINDING, JSONRPC_BINDING, REST_BINDING])
  }
}

/** Reads the agent's card and returns a client on the first interface of `preferences` the card offers. */
export async function createClient (agentUrl: string | URL, options: ClientFactoryOptions = {}): Promise<A2AClient> {
  const card = options.card ?? await fetchAgentCard(agentUrl, options.fetch)
  const agentInterface = selectInterface(card, options.preferences ?? defaultPreferences(options.WebSocket))
  return new A2AClient(createTransport(agentInterface, options), { card, agentInterface })
}
