// createClient: reads the agent card and picks an interface by a preference list,
// WebSocket first when a WebSocket is at hand (this runtime, Node 20, has none of its own).
import t from 'tap'
import WebSocket from 'ws'
import * as server from '../lib/index.js'
import {
  A2A_VERSION, AGENT_CARD_PATH, JSONRPC_BINDING, JsonRpcTransport, NoSupportedInterfaceError, REST_BINDING, RestTransport,
  UnexpectedStatusError, WEBSOCKET_BINDING_URI, WebSocketTransport, createClient, defaultPreferences, fetchAgentCard,
  type AgentCard
} from '../lib/client/index.js'
import { startServer, userMessage } from './helpers/server.js'

const agent = await startServer({ prefix: '/a2a' })
t.teardown(() => agent.close())
const wsUrl = `${agent.origin.replace('http', 'ws')}/a2a`

t.test("the client's binding names and paths are the server's", async t => {
  t.equal(WEBSOCKET_BINDING_URI, server.WEBSOCKET_BINDING_URI)
  t.equal(JSONRPC_BINDING, server.JSONRPC_BINDING)
  t.equal(REST_BINDING, server.REST_BINDING)
  t.equal(AGENT_CARD_PATH, server.AGENT_CARD_PATH)
  t.equal(A2A_VERSION, server.PROTOCOL_VERSION)
})

t.test('without a WebSocket of its own or injected, JSON-RPC comes first', async t => {
  t.equal(typeof globalThis.WebSocket, 'undefined', 'Node 20 has no global WebSocket')
  t.same(defaultPreferences(), [JSONRPC_BINDING, REST_BINDING])
  const client = await createClient(agent.endpoint)
  t.teardown(() => client.close())
  t.type(client.transport, JsonRpcTransport)
  t.same(client.agentInterface, { url: agent.endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' })
  t.equal(client.card?.name, 'fastify-a2a conformance agent')
  t.equal((await client.sendMessage({ message: userMessage('via the card') })).task?.status.state, 'TASK_STATE_COMPLETED')
})

t.test('with an injected WebSocket, the WebSocket interface comes first', async t => {
  t.same(defaultPreferences(WebSocket), [WEBSOCKET_BINDING_URI, JSONRPC_BINDING, REST_BINDING])
  const client = await createClient(agent.origin, { WebSocket, serviceParams: { 'X-From': 'factory' } })
  t.teardown(() => client.close())
  t.type(client.transport, WebSocketTransport)
  t.equal(client.agentInterface?.url, wsUrl)
  const answer = await client.sendMessage({ message: userMessage('params') })
  t.match(answer.task?.artifacts?.[0]?.parts[0]?.data, { 'x-from': 'factory', ':path': '/a2a' })
})

t.test('an explicit preference list; the card URL itself works as the address', async t => {
  const client = await createClient(`${agent.origin}${AGENT_CARD_PATH}`, { preferences: ['GRPC', REST_BINDING, JSONRPC_BINDING] })
  t.teardown(() => client.close())
  t.type(client.transport, RestTransport)
  t.equal((client.transport as RestTransport).url, agent.endpoint)
  t.equal((await client.getExtendedAgentCard()).name, 'fastify-a2a conformance agent')
})

t.test('interfaces of another major version are passed over; none usable is a NoSupportedInterfaceError', async t => {
  const card = await fetchAgentCard(agent.origin)
  const mixed: AgentCard = {
    ...card,
    supportedInterfaces: [
      { url: 'http://elsewhere.example/', protocolBinding: JSONRPC_BINDING, protocolVersion: '2.0' },
      { url: agent.endpoint, protocolBinding: REST_BINDING, protocolVersion: '1.0' }
    ]
  }
  const client = await createClient(agent.origin, { card: mixed })
  t.type(client.transport, RestTransport)
  const error = await createClient(agent.origin, { preferences: ['GRPC'] }).catch((thrown: unknown) => thrown)
  t.type(error, NoSupportedInterfaceError)
  const offered = card.supportedInterfaces.map(i => `${i.protocolBinding} ${i.protocolVersion}`).join(', ')
  t.match(error, { retryable: false, message: `the agent offers ${offered}; this client speaks GRPC (A2A 1.x)` })
})

t.test('a card that cannot be fetched is an UnexpectedStatusError', async t => {
  const error = await createClient(`${agent.origin}/elsewhere/agent.json`).catch((thrown: unknown) => thrown)
  t.type(error, UnexpectedStatusError)
  t.match(error, { status: 404 })
})

t.test('a card without supportedInterfaces (another protocol version) is a NoSupportedInterfaceError', async t => {
  const { supportedInterfaces: _none, ...card } = await fetchAgentCard(agent.origin)
  const error = await createClient(agent.origin, { card: card as AgentCard }).catch((thrown: unknown) => thrown)
  t.type(error, NoSupportedInterfaceError)
  t.match(error, { retryable: false, message: /^the agent offers no interface; this client speaks / })
})
