// The agent card (spec §8): at the host root even under a prefix (under a context's own
// prefix, with it in its URLs), supportedInterfaces
// with absolute URLs, caching headers, 304, the extended card, and card options checked
// at registration.
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import { a2aWebSocket } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { call, startServer } from './helpers/server.js'
import { connect, wsUrl } from './helpers/ws.js'

t.test('served at the host root under a prefix, interfaces from publicUrl', async t => {
  const server = await startServer({ prefix: '/a2a', publicUrl: 'https://agent.example.com' })
  t.teardown(() => server.close())
  const response = await fetch(`${server.origin}/.well-known/agent-card.json`)
  t.equal(response.status, 200)
  t.match(response.headers.get('content-type'), /^application\/json/)
  const card = await response.json()
  t.same(card.supportedInterfaces[0], { url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' })
  t.ok(card.supportedInterfaces.every((i: any) => i.url.startsWith('https://agent.example.com/a2a') || i.url.startsWith('wss://agent.example.com/a2a')))
  t.equal(card.name, conformanceCard.name)
  t.same(card.capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: true })
  for (const removed of ['url', 'preferredTransport', 'additionalInterfaces', 'protocolVersion']) t.notOk(removed in card, removed)
  t.equal((await fetch(`${server.origin}/a2a/.well-known/agent-card.json`)).status, 404, 'not under the prefix')
  const answer = await call(`${server.origin}/a2a`, 'GetTask', { id: 'x' })
  t.equal(answer.error.code, -32001, 'JSON-RPC is under the prefix')
})

t.test('without publicUrl the URLs come from how the client reached the server', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.equal(card.supportedInterfaces[0].url, server.origin)
})

t.test('the extended card\'s URLs are the public card\'s: behind a trusted proxy too, on every binding', async t => {
  const fastify = Fastify({ trustProxy: true })
  t.teardown(() => fastify.close())
  await fastify.register(a2aWebSocket, { prefix: '/a2a', executor: conformanceAgent, card: conformanceCard, extendedCard: conformanceCard })
  const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'agent.example.com' }
  const card = (await fastify.inject({ url: '/.well-known/agent-card.json', headers: forwarded })).json()
  t.equal(card.supportedInterfaces[0].url, 'https://agent.example.com/a2a')
  const viaRpc = await fastify.inject({
    method: 'POST',
    url: '/a2a',
    headers: { ...forwarded, 'content-type': 'application/json', 'a2a-version': '1.0' },
    payload: { jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }
  })
  t.same(viaRpc.json().result.supportedInterfaces, card.supportedInterfaces, 'JSON-RPC')
  const viaRest = await fastify.inject({ url: '/a2a/extendedAgentCard', headers: { ...forwarded, 'a2a-version': '1.0' } })
  t.same(viaRest.json().supportedInterfaces, card.supportedInterfaces, 'HTTP+JSON')
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  const client = await connect(wsUrl(`http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`, '/a2a'), { headers: forwarded })
  t.teardown(() => client.close())
  const viaWebSocket = await client.request('GetExtendedAgentCard', {})
  t.same(viaWebSocket.result.supportedInterfaces, card.supportedInterfaces, 'WebSocket')
})

t.test('ETag and Cache-Control; 304 on a matching If-None-Match', async t => {
  const server = await startServer({ cardMaxAge: 60 })
  t.teardown(() => server.close())
  const first = await fetch(`${server.origin}/.well-known/agent-card.json`)
  const etag = first.headers.get('etag') as string
  t.match(etag, /^"[A-Za-z0-9_-]+"$/)
  t.equal(first.headers.get('cache-control'), 'public, max-age=60')
  const again = await fetch(`${server.origin}/.well-known/agent-card.json`, { headers: { 'if-none-match': etag } })
  t.equal(again.status, 304)
  t.equal(await again.text(), '')
  t.equal(again.headers.get('etag'), etag)
  t.equal((await fetch(`${server.origin}/.well-known/agent-card.json`, { headers: { 'if-none-match': `"other", W/${etag}` } })).status, 304)
  t.equal((await fetch(`${server.origin}/.well-known/agent-card.json`, { headers: { 'if-none-match': '"other"' } })).status, 200)
})

t.test('GetExtendedAgentCard: the configured card, -32004 when not declared, -32007 when not configured', async t => {
  const server = await startServer({ extendedCard: () => ({ ...conformanceCard, skills: [...conformanceCard.skills, { id: 'extra', name: 'Extra', description: '', tags: ['x'] }] }) })
  t.teardown(() => server.close())
  const extended = (await call(server.endpoint, 'GetExtendedAgentCard', undefined)).result
  t.same(extended.skills.map((s: any) => s.id), ['conformance', 'extra'])
  t.equal(extended.supportedInterfaces[0].protocolBinding, 'JSONRPC')

  const notConfigured = await startServer({ extendedCard: undefined })
  t.teardown(() => notConfigured.close())
  t.same((await call(notConfigured.endpoint, 'GetExtendedAgentCard', {})).error, {
    code: -32007,
    message: 'Extended agent card is not configured',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', domain: 'a2a-protocol.org' }]
  })
  const notDeclared = await startServer({ card: { ...conformanceCard, capabilities: { streaming: true } } })
  t.teardown(() => notDeclared.close())
  t.equal((await call(notDeclared.endpoint, 'GetExtendedAgentCard', {})).error.code, -32004)
})

t.test('a bad card or option fails registration, naming it', async t => {
  const register = async (options: object) => {
    const fastify = Fastify()
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, ...options } as any)
    await fastify.ready()
  }
  await t.rejects(register({ card: { ...conformanceCard, skills: [{ id: 's', name: 'S', description: '', tags: [] }] } }),
    { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option card.skills[0].tags: must not have fewer than 1 items' })
  const { name: _name, ...nameless } = conformanceCard
  await t.rejects(register({ card: nameless }), { message: 'Invalid option card.name: is required' })
  await t.rejects(register({ card: { ...conformanceCard, defaultInputModes: [] } }), { message: /card\.defaultInputModes/ })
  await t.rejects(register({ executor: {} }), { message: /Invalid option executor/ })
  await t.rejects(register({ publicUrl: 'agent.example.com' }), { message: 'Invalid option publicUrl: must be an absolute http or https URL' })
  await t.rejects(register({ prefix: 'a2a' }), { message: /Invalid option prefix/ })
  await t.rejects(register({ bodyLimit: 0 }), { message: 'Invalid option bodyLimit: must be an integer >= 1' })
  await t.rejects(register({ extendedCard: { name: 'x' } }), { message: /Invalid option extendedCard\./ })
  await t.rejects(register({ allowMissingVersion: 'yes' }), { message: 'Invalid option allowMissingVersion: must be a boolean' })
})

t.test('a card field v1.0 removed fails registration instead of being served', async t => {
  const register = async (card: object, option = 'card') => {
    const fastify = Fastify()
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, [option]: card } as any)
    await fastify.ready()
  }
  const removed: Array<[object, string]> = [
    [{ url: 'https://agent.example.com/a2a' }, 'url: was removed in A2A v1.0; use supportedInterfaces[].url'],
    [{ preferredTransport: 'JSONRPC' }, 'preferredTransport: was removed in A2A v1.0; use the order of supportedInterfaces'],
    [{ additionalInterfaces: [] }, 'additionalInterfaces: was removed in A2A v1.0; use supportedInterfaces'],
    [{ protocolVersion: '0.3.0' }, 'protocolVersion: was removed in A2A v1.0; use supportedInterfaces[].protocolVersion'],
    [{ supportsAuthenticatedExtendedCard: true }, 'supportsAuthenticatedExtendedCard: was removed in A2A v1.0; use capabilities.extendedAgentCard'],
    [{ supportsExtendedAgentCard: false }, 'supportsExtendedAgentCard: was removed in A2A v1.0; use capabilities.extendedAgentCard'],
    [{ capabilities: { ...conformanceCard.capabilities, stateTransitionHistory: false } }, 'capabilities.stateTransitionHistory: was removed in A2A v1.0; use nothing (v1.0 has no such capability)']
  ]
  for (const [fields, message] of removed) {
    await t.rejects(register({ ...conformanceCard, ...fields }), { message: `Invalid option card.${message}` })
    await t.rejects(register({ ...conformanceCard, ...fields }, 'extendedCard'), { message: `Invalid option extendedCard.${message}` })
  }

  // From a provider, the extended card is the agent's answer: InvalidAgentResponse, not a card with it.
  const server = await startServer({ extendedCard: () => ({ ...conformanceCard, url: 'https://agent.example.com/a2a' }) })
  t.teardown(() => server.close())
  const { error } = await call(server.endpoint, 'GetExtendedAgentCard', {})
  t.equal(error.code, -32006)
  t.equal(error.message, 'Invalid agent response: extended card: url was removed in A2A v1.0; use supportedInterfaces[].url')
})

t.test('security requirements in ProtoJSON with their empty map or scope list left out are accepted', async t => {
  const fastify = Fastify()
  const securityRequirements = [{ schemes: { bearer: {} } }, {}, { schemes: { bearer: { list: [] } } }]
  const card = { ...conformanceCard, securityRequirements, skills: [{ ...conformanceCard.skills[0]!, securityRequirements: [{}] }] }
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card })
  t.teardown(() => fastify.close())
  const served = (await fastify.inject('/.well-known/agent-card.json')).json()
  t.strictSame(served.securityRequirements, securityRequirements)
  t.strictSame(served.skills[0].securityRequirements, [{}])
})

t.test('mounts beside the user\'s own routes', async t => {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  fastify.get('/health', async () => ({ ok: true }))
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix: '/agents/echo' })
  t.same((await fastify.inject('/health')).json(), { ok: true })
  t.equal((await fastify.inject('/.well-known/agent-card.json')).statusCode, 200)
  const rpc = await fastify.inject({ method: 'POST', url: '/agents/echo', headers: { 'a2a-version': '1.0' }, payload: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } } })
  t.equal(rpc.json().error.code, -32001)
  t.type(fastify.a2a.handler, 'object')
})

t.test('registered in a context with a prefix of its own: every route is under it, and the card\'s URLs name it', async t => {
  const fastify = Fastify()
  await fastify.register(async (agents) => {
    await agents.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix: '/a2a' })
  }, { prefix: '/agent' })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const origin = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`
  t.equal((await fetch(`${origin}/.well-known/agent-card.json`)).status, 404, 'the context\'s prefix holds for the card too')
  const card = await (await fetch(`${origin}/agent/.well-known/agent-card.json`)).json()
  t.same(card.supportedInterfaces.slice(0, 3).map((i: any) => i.url), [`${origin}/agent/a2a`, `${origin}/agent/a2a`, `ws://127.0.0.1:${(fastify.server.address() as AddressInfo).port}/agent/a2a`])
  t.equal((await call(card.supportedInterfaces[0].url, 'GetTask', { id: 'x' })).error.code, -32001, 'the JSON-RPC URL the card gives answers')
  const client = await connect(`${card.supportedInterfaces.find((i: any) => i.url.startsWith('ws')).url as string}?A2A-Version=1.0`)
  t.teardown(() => client.close())
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'so does the WebSocket URL')
})

t.test('one agent per instance: registered twice, A2A_ERR_ALREADY_REGISTERED; two contexts with prefixes of their own serve two agents', async t => {
  const twice = Fastify()
  t.teardown(() => twice.close())
  await twice.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await t.rejects(async () => await twice.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix: '/other' }), { code: 'A2A_ERR_ALREADY_REGISTERED' })

  const fastify = Fastify()
  for (const name of ['one', 'two']) {
    await fastify.register(async (context) => {
      await context.register(a2aWebSocket, { executor: conformanceAgent, card: { ...conformanceCard, name } })
    }, { prefix: `/${name}` })
  }
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const origin = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`
  for (const name of ['one', 'two']) {
    const card = await (await fetch(`${origin}/${name}/.well-known/agent-card.json`)).json()
    t.equal(card.name, name)
    t.equal((await call(card.supportedInterfaces[0].url, 'GetTask', { id: 'x' })).error.code, -32001, `${name}: JSON-RPC`)
    const client = await connect(`${card.supportedInterfaces.find((i: any) => i.url.startsWith('ws')).url as string}?A2A-Version=1.0`)
    t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, `${name}: WebSocket`)
    client.close()
  }
})

t.test('signing: the served card carries a JWS over its canonical form that verifies', async t => {
  const { generateKeyPair } = await import('jose')
  const { verifyAgentCard } = await import('../lib/index.js')
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const server = await startServer({ publicUrl: 'https://agent.example.com', signing: { key: privateKey, kid: 'card-key-1', alg: 'ES256' } })
  t.teardown(() => server.close())
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.equal(card.signatures.length, 1)
  const [verified] = await verifyAgentCard(card, publicKey)
  t.same(verified?.protectedHeader, { alg: 'ES256', kid: 'card-key-1', typ: 'JOSE' })
  await t.rejects(verifyAgentCard({ ...card, name: 'impostor' }, publicKey), { code: 'A2A_ERR_CARD_SIGNATURE' })
  await t.rejects(async () => {
    const fastify = Fastify()
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, signing: { key: privateKey, kid: '', alg: 'ES256' } })
    await fastify.ready()
  }, { message: 'Invalid option signing.kid: must be a non-empty key id' })
})
