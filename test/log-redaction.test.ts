// What the log holds of credentials: Fastify logs every request's URL before any hook runs,
// so an API key sent in the query string (auth.apiKey.in: 'query') is logged by the A2A
// routes redacted, through the instance's own `req` serializer (the user's routes log as they
// did); each refusal by auth is logged (spec §13), what was refused and why, never the credential.
import Fastify from 'fastify'
import t from 'tap'
import { a2aWebSocket } from '../lib/index.js'
import { withoutParameter } from '../lib/interceptors/redact.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { post, V1 } from './helpers/server.js'
import { connect, refusedUpgrade } from './helpers/ws.js'
import { logLines } from './helpers/logs.js'

const SECRET = 'key-that-must-not-be-logged'

t.test('an API key in the query string is not written to the log, on any binding', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({
    logger: { level: 'trace', stream, serializers: { req: (request) => ({ url: request.url, own: 'the user\'s serializer' }) } }
  })
  fastify.get('/mine', async () => ({ ok: true }))
  await fastify.register(a2aWebSocket, {
    executor: conformanceAgent, card: conformanceCard, prefix: '/a2a',
    auth: { apiKey: { name: 'api_key', in: 'query', keys: [SECRET] } }
  })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const address = fastify.server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`

  t.equal((await post(`${origin}/a2a?api_key=${SECRET}`, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } })).body.error.code, -32001)
  t.equal((await fetch(`${origin}/a2a/tasks/x?A2A-Version=1.0&api%5Fkey=${SECRET}`)).status, 404, 'a key name sent encoded')
  t.equal((await post(`${origin}/a2a?api_key=wrong-${SECRET}`, { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'x' } })).status, 401)
  const socket = await connect(`ws://127.0.0.1:${origin.split(':')[2]}/a2a/?A2A-Version=1.0&api_key=${SECRET}`)
  t.equal((await socket.request('GetTask', { id: 'x' })).error.code, -32001)
  socket.close()
  t.same(await (await fetch(`${origin}/mine?api_key=mine`, { headers: V1 })).json(), { ok: true })
  t.equal((await fetch(`${origin}/.well-known/agent-card.json?api_key=${SECRET}`)).status, 200, 'the card, at the root beside the prefixed routes')

  t.same(lines.filter(line => line.includes(SECRET)), [], 'no line holds the key')
  const requests = lines.map(line => JSON.parse(line)).filter(entry => entry.msg === 'incoming request').map(entry => entry.req)
  t.same(requests, [
    { url: '/a2a?api_key=REDACTED', own: 'the user\'s serializer' },
    { url: '/a2a/tasks/x?A2A-Version=1.0&api%5Fkey=REDACTED', own: 'the user\'s serializer' },
    { url: '/a2a?api_key=REDACTED', own: 'the user\'s serializer' },
    { url: '/a2a/?A2A-Version=1.0&api_key=REDACTED', own: 'the user\'s serializer' },
    { url: '/mine?api_key=mine', own: 'the user\'s serializer' },
    { url: '/.well-known/agent-card.json?api_key=REDACTED', own: 'the user\'s serializer' }
  ])
})

t.test('with Fastify\'s own serializer the request is logged as it logs it, the key redacted', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { stream } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, auth: { apiKey: { name: 'api_key', in: 'query', keys: [SECRET] } } })
  t.teardown(() => fastify.close())
  t.equal((await fastify.inject({ url: `/tasks/x?api_key=${SECRET}`, headers: V1 })).statusCode, 404)
  const [request] = lines.map(line => JSON.parse(line)).filter(entry => entry.msg === 'incoming request').map(entry => entry.req)
  t.same(request, { method: 'GET', url: '/tasks/x?api_key=REDACTED', host: 'localhost:80', remoteAddress: '127.0.0.1' })
  t.same(lines.filter(line => line.includes(SECRET)), [])
})

t.test('withoutParameter replaces every value of the parameter, compared decoded, and nothing else', async t => {
  t.equal(withoutParameter('/a?k=1&x=%20&k=2&kk=3', 'k'), '/a?k=REDACTED&x=%20&k=REDACTED&kk=3')
  t.equal(withoutParameter('/a?k', 'k'), '/a?k=REDACTED')
  t.equal(withoutParameter('/a?%6B=1&bad=%E0', 'k'), '/a?%6B=REDACTED&bad=%E0')
  t.equal(withoutParameter('/a?x=1', 'k'), '/a?x=1')
  t.equal(withoutParameter('/a', 'k'), '/a')
})

t.test('every refusal by auth is logged with its binding, method and reason, never with the credential', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { stream } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, auth: { bearer: { tokens: ['right'] } } })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const address = fastify.server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const wrong = { ...V1, authorization: `Bearer ${SECRET}` }
  t.equal((await post(origin, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, wrong)).status, 401)
  t.equal((await fetch(`${origin}/tasks/x`, { headers: V1 })).status, 401)
  t.equal((await refusedUpgrade(`ws://127.0.0.1:${origin.split(':')[2]}/`, { headers: { ...wrong, 'Sec-WebSocket-Protocol': 'a2a.v1' } })).status, 401)
  const socket = await connect(`ws://127.0.0.1:${origin.split(':')[2]}/?A2A-Version=1.0`, { headers: { authorization: `Bearer ${SECRET}` } })
  t.equal((await socket.request('GetTask', { id: 'x' })).error.code, -32600)
  socket.close()
  const invalid = 'Bearer realm="a2a", error="invalid_token"'
  t.same(lines.map(line => JSON.parse(line)).filter(entry => entry.msg === 'A2A call refused by auth').map(entry => [entry.level, entry.a2aRefusal]), [
    [30, { binding: 'JSONRPC', method: 'GetTask', reason: 'UNAUTHENTICATED', challenge: invalid }],
    [30, { binding: 'HTTP+JSON', method: 'GetTask', reason: 'UNAUTHENTICATED', challenge: 'Bearer realm="a2a"' }],
    [30, { binding: 'upgrade', method: '', reason: 'UNAUTHENTICATED', challenge: invalid }],
    [30, { binding: 'https://a2a-rust.com/bindings/websocket/v1', method: 'GetTask', reason: 'UNAUTHENTICATED', challenge: invalid }]
  ])
  t.same(lines.filter(line => line.includes(SECRET)), [], 'no line holds the credential')
})
