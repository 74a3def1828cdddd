// Seed 001, limits, each an option with a documented default: streams per connection
// (-32000 "Too many concurrent streams", the connection survives), connections per
// identity (503 at the upgrade), messages per window per connection and per identity
// (-32000 "Rate limit exceeded", then 1008).
import t from 'tap'
import { normalizeOptions } from '../lib/options.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { startServer, userMessage } from './helpers/server.js'
import { connect, refusedUpgrade, wsUrl } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

const OFFER_V1 = { 'Sec-WebSocket-Protocol': 'a2a.v1' }
/** Bearer tokens whose subject is the text after `token-`. */
const auth = { bearer: { verify: (token: string) => token.startsWith('token-') ? { subject: token.slice(6) } : undefined } }
const as = (subject: string) => ({ headers: { authorization: `Bearer token-${subject}` } })

t.test('the defaults: 1 MiB, 128 streams, 256 connections per identity, ping 30 s / pong 10 s / idle 5 min, 1,000 messages per second counted for 5,000 keys', async t => {
  const { websocket } = normalizeOptions({ executor: conformanceAgent, card: conformanceCard })
  t.same(websocket.a2aV1, {
    refuseAtUpgrade: true,
    maxMessageSize: 1024 * 1024,
    maxInFlight: 128,
    maxConnectionsPerIdentity: 256,
    pingInterval: 30_000,
    pongTimeout: 10_000,
    idleTimeout: 300_000,
    messageRate: { max: 1000, timeWindow: 1000, store: undefined, cacheSize: 5000 }
  })
  t.equal(normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { rateLimit: false } } }).websocket.a2aV1?.messageRate, undefined)
  t.throws(() => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { maxStreams: 0 } } }), { message: 'Invalid option websocket.a2aV1.maxStreams: must be an integer >= 1' })
  t.throws(() => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { rateLimit: { store: {} as any } } } }), { message: 'Invalid option websocket.a2aV1.rateLimit.store: must implement incr(key, callback, timeWindow, max)' })
  for (const name of ['pingInterval', 'pongTimeout', 'idleTimeout'] as const) {
    t.throws(() => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { [name]: 2 ** 31 } } }), { message: `Invalid option websocket.a2aV1.${name}: must be at most 2147483647 ms` })
  }
  t.throws(() => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { rateLimit: { timeWindow: 2 ** 31 } } } }), { message: 'Invalid option websocket.a2aV1.rateLimit.timeWindow: must be at most 2147483647 ms' })
  t.throws(() => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { rateLimit: { cacheSize: 0 } } } }), { message: 'Invalid option websocket.a2aV1.rateLimit.cacheSize: must be an integer >= 1' })
  t.throws(() => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { a2aV1: { rateLimit: { cacheSize: 10, store: { incr () {} } } } } }), { message: 'Invalid option websocket.a2aV1.rateLimit.cacheSize: is for the in-memory store: not with store' })
})

t.test('past maxStreams a request gets -32000 "Too many concurrent streams"; the connection survives', async t => {
  const server = await startServer({ websocket: { a2aV1: { maxStreams: 2 } } })
  t.teardown(() => server.close())
  const client = await connectV1(v1Url(server.origin))
  t.teardown(() => client.close())
  client.call('h1', 'SendStreamingMessage', { message: userMessage('hold') })
  client.call('h2', 'SendStreamingMessage', { message: userMessage('hold') })
  const tasks = [(await client.nextFor('h1')).result.task.id, (await client.nextFor('h2')).result.task.id]
  for (const id of ['h1', 'h2']) t.equal((await client.nextFor(id)).result.statusUpdate.status.state, 'TASK_STATE_WORKING')
  t.same(await client.request('h3', 'SendStreamingMessage', { message: userMessage('hold') }), {
    jsonrpc: '2.0',
    id: 'h3',
    error: { code: -32000, message: 'Too many concurrent streams', data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }] }
  })
  client.send({ jsonrpc: '2.0', id: 'h1', cancelStream: true })
  t.same(await client.nextFor('h1'), { jsonrpc: '2.0', id: 'h1', streamEnd: true })
  const frames = await client.stream('s', 'SendStreamingMessage', { message: userMessage('stream 1') })
  t.same(frames.at(-1), { jsonrpc: '2.0', id: 's', streamEnd: true }, 'a freed slot serves a new stream')
  for (const id of tasks) await client.request(`cancel-${id}`, 'CancelTask', { id })
})

t.test('messages past the per-connection rate get -32000 "Rate limit exceeded", then 1008', async t => {
  const server = await startServer({ websocket: { a2aV1: { rateLimit: { max: 3, timeWindow: 60_000 } } } })
  t.teardown(() => server.close())
  const client = await connectV1(v1Url(server.origin))
  for (const id of ['r1', 'r2', 'r3']) t.equal((await client.request(id, 'GetTask', { id: 'x' })).error.code, -32001, `${id} is within the budget`)
  t.same(await client.request('r4', 'GetTask', { id: 'x' }), { jsonrpc: '2.0', id: 'r4', error: { code: -32000, message: 'Rate limit exceeded' } })
  t.same(await client.closed, { code: 1008, reason: 'rate limit exceeded' })
  const fresh = await connectV1(v1Url(server.origin))
  t.equal((await fresh.request('r', 'GetTask', { id: 'x' })).error.code, -32001, 'another (anonymous) connection has its own budget')
  fresh.close()
})

t.test('the rate is shared by the connections of one identity, not by other identities', async t => {
  const server = await startServer({ auth, websocket: { a2aV1: { rateLimit: { max: 3, timeWindow: 60_000 } } } })
  t.teardown(() => server.close())
  const first = await connectV1(v1Url(server.origin), as('alice'))
  const second = await connectV1(v1Url(server.origin), as('alice'))
  const bob = await connectV1(v1Url(server.origin), as('bob'))
  t.teardown(() => { first.close(); bob.close() })
  t.equal((await first.request('a1', 'GetTask', { id: 'x' })).error.code, -32001)
  t.equal((await first.request('a2', 'GetTask', { id: 'x' })).error.code, -32001)
  t.equal((await second.request('a3', 'GetTask', { id: 'x' })).error.code, -32001)
  t.same(await second.request('a4', 'GetTask', { id: 'x' }), { jsonrpc: '2.0', id: 'a4', error: { code: -32000, message: 'Rate limit exceeded' } })
  t.equal((await second.closed).code, 1008)
  t.equal(first.socket.readyState, first.socket.OPEN, 'only the connection that sent past the budget is closed')
  for (const id of ['b1', 'b2', 'b3']) t.equal((await bob.request(id, 'GetTask', { id: 'x' })).error.code, -32001, `bob's ${id}`)
})

t.test('rateLimit.cacheSize: past that many connections and identities counted, the least recently counted starts over', async t => {
  for (const [cacheSize, afterBob] of [[2, -32001], [4, -32000]] as const) {
    const server = await startServer({ auth, websocket: { a2aV1: { rateLimit: { max: 2, timeWindow: 60_000, cacheSize } } } })
    t.teardown(() => server.close())
    const first = await connectV1(v1Url(server.origin), as('alice'))
    for (const id of ['a1', 'a2']) t.equal((await first.request(id, 'GetTask', { id: 'x' })).error.code, -32001, `alice's ${id}`)
    first.close()
    const bob = await connectV1(v1Url(server.origin), as('bob'))
    t.equal((await bob.request('b1', 'GetTask', { id: 'x' })).error.code, -32001, 'bob counts two keys: his connection and his identity')
    bob.close()
    const second = await connectV1(v1Url(server.origin), as('alice'))
    t.equal((await second.request('a3', 'GetTask', { id: 'x' })).error.code, afterBob, `cacheSize ${cacheSize}: alice's identity is ${afterBob === -32001 ? 'forgotten' : 'still counted'}`)
    second.close()
  }
})

t.test('past maxConnectionsPerIdentity an a2a.v1 upgrade is refused with 503; a freed slot is reused', async t => {
  const server = await startServer({ auth, websocket: { a2aV1: { maxConnectionsPerIdentity: 2 } } })
  t.teardown(() => server.close())
  const one = await connectV1(v1Url(server.origin), as('alice'))
  const two = await connectV1(v1Url(server.origin), as('alice'))
  const refused = await refusedUpgrade(v1Url(server.origin), { headers: { ...as('alice').headers, ...OFFER_V1 } })
  t.same(refused, {
    status: 503,
    headers: refused.headers,
    body: { error: { code: 503, status: 'UNAVAILABLE', message: 'Service unavailable: 2 WebSocket connections are open for this identity' } }
  })
  const bob = await connectV1(v1Url(server.origin), as('bob'))
  const seed = await connect(wsUrl(server.origin), as('alice'))
  t.pass('another identity, and seed-000 connections, are not counted against alice')
  one.close()
  await one.closed
  await new Promise(resolve => setTimeout(resolve, 50))
  const three = await connectV1(v1Url(server.origin), as('alice'))
  t.equal((await three.request('r', 'GetTask', { id: 'x' })).error.code, -32001)
  for (const client of [two, bob, seed, three]) client.close()
})
