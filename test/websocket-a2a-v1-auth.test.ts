// Seed 001, authentication: by default an a2a.v1 upgrade whose credential the built-in
// auth refuses is answered 401 / 403 before the 101; a credential that stops being valid
// mid-connection gets the call's error frame, then close 4001. Every call is still checked
// by the interceptor chain, with the request's own serviceParams over the upgrade's.
import t from 'tap'
import { SignJWT, generateKeyPair } from 'jose'
import { startServer, userMessage } from './helpers/server.js'
import { connect, refusedUpgrade, wsUrl } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

const OFFER_V1 = { 'Sec-WebSocket-Protocol': 'a2a.v1' }
const challenge = 'Bearer realm="a2a"'
const errorInfo = (reason: string, wwwAuthenticate: string) =>
  ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-rust.com', metadata: { 'www-authenticate': wwwAuthenticate } })

const valid = new Set(['token-1', 'token-2'])
const server = await startServer({ auth: { bearer: { verify: (token) => valid.has(token) ? { subject: token } : undefined } } })
t.teardown(() => server.close())

t.test('a refused credential is answered 401 before the 101 (the default for a2a.v1 only)', async t => {
  const missing = await refusedUpgrade(v1Url(server.origin), { headers: OFFER_V1 })
  t.equal(missing.status, 401)
  t.equal(missing.headers['www-authenticate'], challenge)
  t.same(missing.body, { error: { code: 401, status: 'UNAUTHENTICATED', message: 'authentication required', details: [errorInfo('UNAUTHENTICATED', challenge)] } })
  const wrong = await refusedUpgrade(v1Url(server.origin), { headers: { ...OFFER_V1, authorization: 'Bearer nope' } })
  t.equal(wrong.status, 401)
  t.equal(wrong.headers['www-authenticate'], `${challenge}, error="invalid_token"`)
  const seed = await connect(wsUrl(server.origin))
  t.equal((await seed.request('GetTask', { id: 'x' })).error.code, -32600, 'seed 000 still upgrades, and refuses each call')
  seed.close()
})

t.test('a forbidden credential is answered 403 before the 101', async t => {
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const scoped = await startServer({ auth: { jwt: { key: publicKey, audience: 'a2a', requiredScopes: ['a2a:call'] } } })
  t.teardown(() => scoped.close())
  const token = (scope: string) => new SignJWT({ scope }).setProtectedHeader({ alg: 'ES256' }).setSubject('carol').setAudience('a2a').setExpirationTime('5m').sign(privateKey)
  const refused = await refusedUpgrade(v1Url(scoped.origin), { headers: { ...OFFER_V1, authorization: `Bearer ${await token('other')}` } })
  t.equal(refused.status, 403)
  t.same(refused.body.error, {
    code: 403,
    status: 'PERMISSION_DENIED',
    message: 'permission denied',
    details: [errorInfo('PERMISSION_DENIED', `${challenge}, error="insufficient_scope", scope="a2a:call"`)]
  })
  const client = await connectV1(v1Url(scoped.origin), { headers: { authorization: `Bearer ${await token('a2a:call')}` } })
  t.equal((await client.request('r', 'GetTask', { id: 'x' })).error.code, -32001)
  client.close()
})

t.test('a credential that expires mid-connection: the call\'s error frame, then close 4001', async t => {
  const client = await connectV1(v1Url(server.origin), { headers: { authorization: 'Bearer token-1' } })
  t.teardown(() => valid.add('token-1'))
  t.equal((await client.request('before', 'GetTask', { id: 'x' })).error.code, -32001)
  valid.delete('token-1')
  t.same(await client.request('after', 'GetTask', { id: 'x' }), {
    jsonrpc: '2.0',
    id: 'after',
    error: { code: -32600, message: 'authentication required', data: [errorInfo('UNAUTHENTICATED', `${challenge}, error="invalid_token"`)] }
  })
  t.same(await client.closed, { code: 4001, reason: 'authentication required' })
})

t.test('refuseAtUpgrade: false lets the upgrade through; the first call is refused, then 4001', async t => {
  const open = await startServer({ auth: { bearer: { tokens: ['t'] } }, websocket: { a2aV1: { refuseAtUpgrade: false } } })
  t.teardown(() => open.close())
  const client = await connectV1(v1Url(open.origin))
  t.same((await client.request('r', 'GetTask', { id: 'x' })).error.data, [errorInfo('UNAUTHENTICATED', challenge)])
  t.equal((await client.closed).code, 4001)
})

t.test('a call\'s own credential refused: its error frame alone; the connection and its streams go on', async t => {
  const client = await connectV1(v1Url(server.origin), { headers: { authorization: 'Bearer token-1' } })
  t.teardown(() => client.close())
  client.call('held', 'SendStreamingMessage', { message: userMessage('hold') })
  const task = (await client.nextFor('held')).result.task
  t.same(await client.request('stale', 'GetTask', { id: 'x' }, { 'a2a-version': '1.0', authorization: 'Bearer stale' }), {
    jsonrpc: '2.0',
    id: 'stale',
    error: { code: -32600, message: 'authentication required', data: [errorInfo('UNAUTHENTICATED', `${challenge}, error="invalid_token"`)] }
  })
  t.equal((await client.request('c', 'CancelTask', { id: task.id })).result.status.state, 'TASK_STATE_CANCELED', 'the upgrade\'s credential still serves')
  const rest = []
  for (let frame = await client.nextFor('held'); ; frame = await client.nextFor('held')) {
    rest.push(frame)
    if (frame.streamEnd === true) break
  }
  t.equal(rest.at(-2).result.statusUpdate.status.state, 'TASK_STATE_CANCELED', 'the held stream went on to its end')
})

t.test('a credential in a request\'s serviceParams applies to that call', async t => {
  const client = await connectV1(v1Url(server.origin), { headers: { authorization: 'Bearer token-1' } })
  t.teardown(() => client.close())
  const seen = async (id: string, serviceParams?: Record<string, string>) =>
    (await client.request(id, 'SendMessage', { message: userMessage('params') }, serviceParams)).result.task.artifacts[0].parts[0].data.authorization
  t.equal(await seen('own', { 'a2a-version': '1.0', authorization: 'Bearer token-2' }), 'Bearer token-2')
  t.equal(await seen('upgrade'), 'Bearer token-1')
})
