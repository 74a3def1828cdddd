// Built-in authentication (issue 5): bearer tokens, API keys and JWTs, refused in each
// binding's own shape, checked on every call and every WebSocket frame, and advertised
// in the card from the same configuration.
import Fastify from 'fastify'
import t from 'tap'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import type { Identity } from '../lib/index.js'
import { post, startServer, userMessage, V1 } from './helpers/server.js'
import { rest } from './helpers/rest.js'
import { connect, refusedUpgrade, wsUrl } from './helpers/ws.js'

const rpc = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: 1, method, params })
const challenge = 'Bearer realm="a2a"'

t.test('bearer: refusal shapes on JSON-RPC, REST and WebSocket; success with the token', async t => {
  const server = await startServer({ auth: { bearer: { tokens: ['s3cret'] } } })
  t.teardown(() => server.close())

  const anonymous = await post(server.endpoint, rpc('GetTask', { id: 'x' }))
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers.get('www-authenticate'), challenge)
  t.same(anonymous.body, {
    jsonrpc: '2.0',
    id: 1,
    error: { code: -32600, message: 'authentication required', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': challenge } }] }
  })
  const wrong = await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, authorization: 'Bearer nope' })
  t.equal(wrong.status, 401)
  t.equal(wrong.headers.get('www-authenticate'), `${challenge}, error="invalid_token"`)
  const ok = await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, authorization: 'Bearer s3cret' })
  t.equal(ok.status, 200)
  t.equal(ok.body.error.code, -32001, 'authenticated: the call itself runs')

  const restRefused = await rest(server.endpoint, 'GET', '/tasks/x')
  t.equal(restRefused.status, 401)
  t.equal(restRefused.headers.get('www-authenticate'), challenge)
  t.same(restRefused.body, {
    error: { code: 401, status: 'UNAUTHENTICATED', message: 'authentication required', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': challenge } }] }
  })
  t.equal((await rest(server.endpoint, 'GET', '/tasks/x', { headers: { ...V1, authorization: 'Bearer s3cret' } })).status, 404)

  const ws = await connect(wsUrl(server.origin))
  t.same((await ws.request('GetTask', { id: 'x' }, 'w')).error.data[0], { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': challenge } })
  ws.close()
  const wsOk = await connect(wsUrl(server.origin), { headers: { authorization: 'Bearer s3cret' } })
  t.equal((await wsOk.request('SendMessage', { message: userMessage('hi') })).result.task.status.state, 'TASK_STATE_COMPLETED')
  wsOk.close()

  t.equal((await fetch(`${server.origin}/.well-known/agent-card.json`)).status, 200, 'the public card stays public')
})

t.test('the card declares the configured schemes, not written twice', async t => {
  const server = await startServer({ auth: { bearer: { tokens: ['a'] }, apiKey: { name: 'X-API-Key', keys: ['k'] } } })
  t.teardown(() => server.close())
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  t.same(card.securitySchemes, {
    bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } },
    apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } }
  })
  t.same(card.securityRequirements, [{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }])
})

t.test('API key in a header or the query string, on every binding', async t => {
  const server = await startServer({ auth: { apiKey: { name: 'X-API-Key', keys: ['key-1'] } } })
  t.teardown(() => server.close())
  const refused = await post(server.endpoint, rpc('GetTask', { id: 'x' }))
  t.equal(refused.status, 401)
  t.equal(refused.headers.get('www-authenticate'), 'ApiKey realm="a2a", header="X-API-Key"')
  const wrong = await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, 'x-api-key': 'key-0' })
  t.equal(wrong.status, 401)
  t.equal(wrong.headers.get('www-authenticate'), 'ApiKey realm="a2a", header="X-API-Key"', 'a wrong key is challenged for a key, not a Bearer token')
  t.equal((await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, 'x-api-key': 'key-1' })).body.error.code, -32001)
  t.equal((await rest(server.endpoint, 'GET', '/tasks/x', { headers: { ...V1, 'x-api-key': 'key-1' } })).status, 404)

  const query = await startServer({ auth: { apiKey: { name: 'api_key', in: 'query', keys: ['key-2'] } } })
  t.teardown(() => query.close())
  t.equal((await post(`${query.endpoint}/?api_key=key-2`, rpc('GetTask', { id: 'x' }))).body.error.code, -32001)
  const wrongInQuery = await post(`${query.endpoint}/?api_key=wrong`, rpc('GetTask', { id: 'x' }))
  t.equal(wrongInQuery.status, 401)
  t.equal(wrongInQuery.headers.get('www-authenticate'), 'ApiKey realm="a2a", query="api_key"')
  const browserLike = await connect(`${wsUrl(query.origin)}&api_key=key-2`)
  t.equal((await browserLike.request('GetTask', { id: 'x' })).error.code, -32001, 'a browser WebSocket can authenticate by query')
  browserLike.close()
})

t.test('a verify function sets the identity the executor sees', async t => {
  let seen: unknown
  const server = await startServer({
    auth: { bearer: { verify: (token) => token === 'alice-token' ? { subject: 'alice', scopes: ['tasks:read'] } : undefined } },
    executor: { async execute (context, events) { seen = context.identity; await events.completed() } }
  })
  t.teardown(() => server.close())
  await post(server.endpoint, rpc('SendMessage', { message: userMessage('x') }), { ...V1, authorization: 'Bearer alice-token' })
  t.same(seen, { subject: 'alice', scopes: ['tasks:read'], scheme: 'bearer' })
  t.equal((await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, authorization: 'Bearer bob-token' })).status, 401)
})

t.test('JWT: issuer, audience, expiry and scopes, with a key or a JWKS URL', async t => {
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const token = (claims: Record<string, unknown>, expires = '5m') => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://issuer.example').setAudience('a2a').setSubject('carol').setIssuedAt().setExpirationTime(expires).sign(privateKey)

  const jwks = Fastify()
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }
  jwks.get('/jwks.json', async () => ({ keys: [jwk] }))
  await jwks.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => jwks.close())
  const jwksUrl = `http://127.0.0.1:${(jwks.server.address() as { port: number }).port}/jwks.json`

  for (const jwt of [{ key: publicKey }, { key: jwk }, { jwksUrl }]) {
    const server = await startServer({ auth: { jwt: { ...jwt, issuer: 'https://issuer.example', audience: 'a2a', requiredScopes: ['a2a:call'] } } })
    t.teardown(() => server.close())
    const send = (bearer: string) => post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, authorization: `Bearer ${bearer}` })
    t.equal((await send(await token({ scope: 'a2a:call other' }))).body.error.code, -32001, 'a valid token')
    const forbidden = await send(await token({ scope: 'other' }))
    t.equal(forbidden.status, 403)
    t.equal(forbidden.headers.get('www-authenticate'), `${challenge}, error="insufficient_scope", scope="a2a:call"`)
    t.same(forbidden.body.error, { code: -32600, message: 'permission denied', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PERMISSION_DENIED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': `${challenge}, error="insufficient_scope", scope="a2a:call"` } }] })
    const restForbidden = await rest(server.endpoint, 'GET', '/tasks/x', { headers: { ...V1, authorization: `Bearer ${await token({ scope: 'other' })}` } })
    t.same([restForbidden.status, restForbidden.body.error.status], [403, 'PERMISSION_DENIED'])
    t.equal((await send(await token({ scope: 'a2a:call' }, '-1m'))).status, 401, 'expired')
    const otherIssuer = await new SignJWT({ scope: 'a2a:call' }).setProtectedHeader({ alg: 'ES256' }).setIssuer('https://evil.example').setAudience('a2a').setExpirationTime('5m').sign(privateKey)
    t.equal((await send(otherIssuer)).status, 401, 'wrong issuer')
    const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
    t.same(card.securitySchemes, { jwt: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } } })
    t.same(card.securityRequirements, [{ schemes: { jwt: { list: ['a2a:call'] } } }])
  }
})

t.test('JWT: a token without exp, without a sub, or for another audience is refused as invalid', async t => {
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const seen: unknown[] = []
  const server = await startServer({
    auth: { jwt: { key: publicKey, issuer: 'https://issuer.example', audience: 'a2a' } },
    interceptors: [{ before (context) { seen.push(context.identity) } }]
  })
  t.teardown(() => server.close())
  const token = (claims: Record<string, unknown>) => new SignJWT(claims).setProtectedHeader({ alg: 'ES256' }).setIssuer('https://issuer.example').setIssuedAt().sign(privateKey)
  const exp = Math.floor(Date.now() / 1000) + 300
  const invalid = `${challenge}, error="invalid_token"`
  const refusals: Array<[string, Record<string, unknown>]> = [
    ['no exp', { sub: 'carol', aud: 'a2a' }],
    ['no sub', { aud: 'a2a', exp }],
    ['an empty sub', { sub: '', aud: 'a2a', exp }],
    ['a sub that is no string', { sub: 7, aud: 'a2a', exp }],
    ['another audience', { sub: 'carol', aud: 'some-other-service', exp }],
    ['no audience', { sub: 'carol', exp }]
  ]
  for (const [what, claims] of refusals) {
    const refused = await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, authorization: `Bearer ${await token(claims)}` })
    t.equal(refused.status, 401, what)
    t.equal(refused.headers.get('www-authenticate'), invalid, what)
    t.same(refused.body, {
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32600, message: 'authentication required', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': invalid } }] }
    }, what)
  }
  t.same(seen, [], 'no call went past auth')
  const accepted = await post(server.endpoint, rpc('GetTask', { id: 'x' }), { ...V1, authorization: `Bearer ${await token({ sub: 'carol', aud: 'a2a', exp })}` })
  t.equal(accepted.body.error.code, -32001)
  t.same((seen as Identity[]).map(({ claims, ...identity }) => identity), [{ subject: 'carol', scheme: 'jwt', scopes: [] }], 'the identity\'s subject is the sub claim')
})

t.test('over WebSocket a token that expires is refused from then on; the connection stays open', async t => {
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const server = await startServer({ auth: { jwt: { key: publicKey, audience: 'a2a' } } })
  t.teardown(() => server.close())
  // 2 to 3 s ahead (a JWT's exp is in whole seconds): time for the upgrade and the first call on a loaded machine.
  const expiresAt = Math.floor(Date.now() / 1000) + 3
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256' }).setSubject('dave').setAudience('a2a').setExpirationTime(expiresAt).sign(privateKey)
  const client = await connect(wsUrl(server.origin), { headers: { authorization: `Bearer ${token}` } })
  t.teardown(() => client.close())
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001)
  await new Promise(resolve => setTimeout(resolve, Math.max(0, expiresAt * 1000 - Date.now()) + 100))
  const refused = await client.request('GetTask', { id: 'x' })
  t.equal(refused.error.code, -32600)
  t.equal(refused.error.data[0].reason, 'UNAUTHENTICATED')
  t.equal(refused.error.data[0].metadata['www-authenticate'], `${challenge}, error="invalid_token"`)
  t.equal(client.socket.readyState, client.socket.OPEN)
})

t.test('refuseAtUpgrade: an upgrade without a valid credential gets 401 before the 101', async t => {
  const server = await startServer({ auth: { bearer: { tokens: ['t'] }, refuseAtUpgrade: true } })
  t.teardown(() => server.close())
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.equal(refused.status, 401)
  t.equal(refused.headers['www-authenticate'], challenge)
  t.same(refused.body.error.status, 'UNAUTHENTICATED')
  const ok = await connect(wsUrl(server.origin), { headers: { authorization: 'Bearer t' } })
  ok.close()
})

t.test('the extended card: only to authenticated callers, from a provider that sees the caller', async t => {
  const { conformanceCard } = await import('../examples/agent.js')
  const server = await startServer({
    auth: { bearer: { verify: (token) => ({ subject: token }) } },
    extendedCard: (context) => ({ ...conformanceCard, name: `card for ${(context.identity as { subject: string }).subject}` })
  })
  t.teardown(() => server.close())
  t.equal((await post(server.endpoint, rpc('GetExtendedAgentCard', {}))).status, 401)
  const card = await post(server.endpoint, rpc('GetExtendedAgentCard', {}), { ...V1, authorization: 'Bearer erin' })
  t.equal(card.body.result.name, 'card for erin')
  t.same(card.body.result.securitySchemes, { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } })
  t.equal((await rest(server.endpoint, 'GET', '/extendedAgentCard')).status, 401)
})

t.test('realm: the challenges\' realm, any printable ASCII but " and \\', async t => {
  const server = await startServer({ auth: { bearer: { tokens: ['s3cret'] }, realm: 'My agent (prod)' } })
  t.teardown(() => server.close())
  const anonymous = await post(server.endpoint, rpc('GetTask', { id: 'x' }))
  t.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="My agent (prod)"')
})

t.test('bad auth options fail registration, naming the option', async t => {
  const { a2aWebSocket } = await import('../lib/index.js')
  const { conformanceAgent, conformanceCard } = await import('../examples/agent.js')
  const register = async (auth: object) => {
    const fastify = Fastify()
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, auth } as any)
    await fastify.ready()
    t.teardown(() => fastify.close())
  }
  await t.rejects(register({}), { message: 'Invalid option auth: must configure bearer, apiKey or jwt' })
  await t.rejects(register({ bearer: { tokens: [] } }), { message: 'Invalid option auth.bearer.tokens: must be a non-empty array of non-empty strings' })
  await t.rejects(register({ apiKey: { name: 'bad name', keys: ['k'] } }), { message: /auth\.apiKey\.name/ })
  await t.rejects(register({ jwt: {} }), { message: 'Invalid option auth.jwt: needs exactly one of jwksUrl and key' })
  const key = new Uint8Array(32)
  const audience = 'a2a'
  const refusals: Array<[unknown, string]> = [
    [null, 'auth: must be an object'],
    [{ bearer: null }, 'auth.bearer: must be an object'],
    [{ apiKey: 'X-API-Key' }, 'auth.apiKey: must be an object'],
    [{ jwt: null }, 'auth.jwt: must be an object'],
    [{ bearer: { tokens: ['a'], verify: 5 } }, 'auth.bearer.verify: must be a function'],
    [{ apiKey: { name: 'X-API-Key', keys: ['k'], verify: 'yes' } }, 'auth.apiKey.verify: must be a function'],
    [{ bearer: { tokens: ['a'] }, refuseAtUpgrade: 'yes' }, 'auth.refuseAtUpgrade: must be a boolean'],
    [{ jwt: { key, audience, clockTolerance: 'abc' } }, 'auth.jwt.clockTolerance: must be seconds >= 0 or a duration such as "30s"'],
    [{ jwt: { key, audience, clockTolerance: -1 } }, 'auth.jwt.clockTolerance: must be seconds >= 0 or a duration such as "30s"'],
    [{ jwt: { key, audience, issuer: 5 } }, 'auth.jwt.issuer: must be a non-empty string or a non-empty array of them'],
    [{ jwt: { key } }, 'auth.jwt.audience: is required: the aud this agent accepts'],
    [{ jwt: { key, issuer: 'https://idp.example' } }, 'auth.jwt.audience: is required: the aud this agent accepts'],
    [{ jwt: { key, audience: ['a', ''] } }, 'auth.jwt.audience: must be a non-empty string or a non-empty array of them'],
    [{ jwt: { key: 'secret', audience } }, 'auth.jwt.key: must be a CryptoKey, a KeyObject, a JWK or a non-empty Uint8Array'],
    [{ jwt: { key: new Uint8Array(0), audience } }, 'auth.jwt.key: must be a CryptoKey, a KeyObject, a JWK or a non-empty Uint8Array'],
    [{ jwt: { jwksUrl: 'ftp://idp.example/jwks', audience } }, 'auth.jwt.jwksUrl: must be an absolute http or https URL'],
    [{ jwt: { jwksUrl: '/jwks', audience } }, 'auth.jwt.jwksUrl: must be an absolute http or https URL'],
    ...['http://idp.example/jwks', 'http://128.0.0.1/jwks', 'http://[::2]/jwks', 'http://localhost.example/jwks'].map((jwksUrl): [unknown, string] =>
      [{ jwt: { jwksUrl, audience } }, 'auth.jwt.jwksUrl: must be an https URL (http only to a loopback host: 127.0.0.0/8, ::1, localhost)']),
    [{ jwt: { key, audience, openIdConnectUrl: 5 } }, 'auth.jwt.openIdConnectUrl: must be an absolute http or https URL'],
    [{ bearer: { tokens: ['a'] }, realm: 'a2a\r\nX-Injected: 1' }, 'auth.realm: must be printable ASCII without " or \\'],
    [{ bearer: { tokens: ['a'] }, realm: 'a"b' }, 'auth.realm: must be printable ASCII without " or \\'],
    [{ bearer: { tokens: ['a'] }, realm: 'a\\' }, 'auth.realm: must be printable ASCII without " or \\'],
    [{ bearer: { tokens: ['a'] }, realm: '日本' }, 'auth.realm: must be printable ASCII without " or \\'],
    [{ bearer: { tokens: ['a'] }, realm: 5 }, 'auth.realm: must be printable ASCII without " or \\']
  ]
  for (const [auth, message] of refusals) {
    await t.rejects(register(auth as object), { code: 'A2A_ERR_INVALID_OPTION', message: `Invalid option ${message}` }, message)
  }
  const { publicKey } = await generateKeyPair('ES256')
  await register({ jwt: { key: publicKey, issuer: ['https://idp.example'], audience: 'a2a', clockTolerance: '30s', openIdConnectUrl: 'https://idp.example/.well-known/openid-configuration' } })
  await register({ jwt: { key, audience: ['a2a', 'a2a-staging'], clockTolerance: 5 } })
  for (const jwksUrl of ['https://idp.example/jwks', 'http://127.0.0.1:8080/jwks', 'http://127.255.0.1/jwks', 'http://[::1]/jwks', 'http://localhost:8080/jwks']) {
    await register({ jwt: { jwksUrl, audience } })
  }
  t.pass('well-typed jwt options are accepted')
})
