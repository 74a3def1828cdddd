// CORS through @fastify/cors (issue 5): preflight for the JSON-RPC and REST routes with
// the A2A service parameters allowed and the headers a client reads exposed.
import Fastify from 'fastify'
import t from 'tap'
import { a2aWebSocket } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { normalizeOptions } from '../lib/options.js'
import { post, startServer } from './helpers/server.js'

t.test('preflight and response headers on the A2A routes and the card', async t => {
  const server = await startServer({ cors: { origin: ['https://app.example.com'] }, prefix: '/a2a', auth: { apiKey: { name: 'X-API-Key', keys: ['k'] } } })
  t.teardown(() => server.close())
  for (const path of ['/a2a', '/a2a/message:send']) {
    const preflight = await fetch(server.origin + path, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'a2a-version, content-type' }
    })
    t.equal(preflight.status, 204, path)
    t.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example.com')
    t.same(preflight.headers.get('access-control-allow-headers')?.split(',').map(h => h.trim()).sort(),
      ['a2a-extensions', 'a2a-version', 'authorization', 'content-type', 'x-api-key'])
  }
  const reply = await post(`${server.origin}/a2a`, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '1.0', origin: 'https://app.example.com', 'x-api-key': 'k' })
  t.equal(reply.headers.get('access-control-allow-origin'), 'https://app.example.com')
  t.same(reply.headers.get('access-control-expose-headers')?.split(',').map(h => h.trim()), ['a2a-version', 'a2a-extensions', 'www-authenticate', 'retry-after'])
  const card = await fetch(`${server.origin}/.well-known/agent-card.json`, { headers: { origin: 'https://app.example.com' } })
  t.equal(card.headers.get('access-control-allow-origin'), 'https://app.example.com')
  const other = await fetch(`${server.origin}/.well-known/agent-card.json`, { headers: { origin: 'https://evil.example' } })
  t.equal(other.headers.get('access-control-allow-origin'), null)
})

t.test('a browser may delete a push config over REST: DELETE is among the methods a preflight allows', async t => {
  const server = await startServer({ cors: true, prefix: '/a2a' })
  t.teardown(() => server.close())
  const origin = 'https://app.example.com'
  const preflight = await fetch(`${server.origin}/a2a/tasks/t-1/pushNotificationConfigs/c-1`, {
    method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'a2a-version' }
  })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-origin'), origin)
  t.same(preflight.headers.get('access-control-allow-methods')?.split(',').map(m => m.trim()), ['GET', 'HEAD', 'POST', 'DELETE'])
  const own = await startServer({ cors: { methods: ['GET', 'POST'] } })
  t.teardown(() => own.close())
  const narrowed = await fetch(`${own.origin}/message:send`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } })
  t.equal(narrowed.headers.get('access-control-allow-methods'), 'GET, POST', 'methods of your own replace them')
})

t.test('off by default', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const reply = await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '1.0', origin: 'https://app.example.com' })
  t.equal(reply.headers.get('access-control-allow-origin'), null)
})

t.test('with no prefix (the default) the routes, the card and the preflight share one CORS', async t => {
  const server = await startServer({ cors: true })
  t.teardown(() => server.close())
  const origin = 'https://app.example.com'
  for (const path of ['/', '/message:send', '/.well-known/agent-card.json']) {
    const preflight = await fetch(server.origin + path, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } })
    t.equal(preflight.status, 204, path)
    t.equal(preflight.headers.get('access-control-allow-origin'), origin, path)
  }
  const reply = await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'a2a-version': '1.0', origin })
  t.equal(reply.body.error.code, -32001)
  t.equal(reply.headers.get('access-control-allow-origin'), origin)
  const card = await fetch(`${server.origin}/.well-known/agent-card.json`, { headers: { origin } })
  t.equal(card.status, 200)
  t.equal(card.headers.get('access-control-allow-origin'), origin)
  t.equal((await card.json()).supportedInterfaces[0].url, server.origin)

})
t.test('the preflights answered are the plugin\'s paths alone: any other path gets the application\'s 404, without CORS headers', async t => {
  for (const prefix of ['', '/a2a']) {
    const fastify = Fastify()
    fastify.setNotFoundHandler((request, reply) => { reply.code(404).send({ mine: `${request.method} ${request.url}` }) })
    fastify.post('/api/x', async () => ({ ok: true }))
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix, cors: true })
    t.teardown(() => fastify.close())
    const preflight = async (url: string) => {
      const reply = await fastify.inject({ method: 'OPTIONS', url, headers: { origin: 'https://page.example', 'access-control-request-method': 'POST' } })
      return { status: reply.statusCode, allowOrigin: reply.headers['access-control-allow-origin'], allowMethods: reply.headers['access-control-allow-methods'], body: reply.body }
    }
    for (const url of ['/api/x', '/no/such/path']) {
      t.same(await preflight(url), { status: 404, allowOrigin: undefined, allowMethods: undefined, body: JSON.stringify({ mine: `OPTIONS ${url}` }) }, `prefix '${prefix}': ${url}`)
    }
    // JSON-RPC (with and without the trailing slash under a prefix), REST, REST under a tenant.
    for (const url of new Set([prefix || '/', `${prefix}/`, `${prefix}/message:send`, `${prefix}/tasks/t-1:cancel`, `${prefix}/acme/tasks`])) {
      t.same(await preflight(url), { status: 204, allowOrigin: 'https://page.example', allowMethods: 'GET, HEAD, POST, DELETE', body: '' }, `prefix '${prefix}': ${url}`)
    }
    const card = await fastify.inject({ url: '/.well-known/agent-card.json', headers: { origin: 'https://page.example' } })
    t.same([card.statusCode, card.headers['access-control-allow-origin']], [200, 'https://page.example'], `prefix '${prefix}': the card`)
  }
})

t.test('cors is a boolean or an object of @fastify/cors options; anything else fails registration', async t => {
  const options = (cors: unknown) => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, cors: cors as never })
  for (const cors of ['yes', 5, null, [], () => {}]) {
    t.throws(() => options(cors), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option cors: must be a boolean or an object of @fastify/cors options' }, String(cors))
  }
  t.same(options(true).cors, {})
  t.equal(options(false).cors, undefined)
})
