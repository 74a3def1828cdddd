// Built-in rate limiting (issue 5): a fixed window per caller on every binding and every
// WebSocket frame, counted exactly even for frames that arrive in one TCP write; a store out of
// reach (Redis behind a proxy that stalls or refuses) makes calls Unavailable within storeTimeout.
import fastifyRateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { a2aWebSocket } from '../lib/index.js'
import { normalizeOptions } from '../lib/options.js'
import { faultProxy, within } from './helpers/fault-proxy.js'
import { logLines } from './helpers/logs.js'
import { requireRedis } from './helpers/redis.js'
import { post, startServer, userMessage, V1 } from './helpers/server.js'
import { rest } from './helpers/rest.js'
import { clientFrame, connect, frameReader, rawUpgrade, wsUrl } from './helpers/ws.js'

const rpc = (id: number) => ({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'x' } })

t.test('a burst of 50 frames in one TCP write: exactly max are served, the rest refused with RetryInfo', async t => {
  const server = await startServer({ rateLimit: { max: 20, timeWindow: 60_000 } })
  t.teardown(() => server.close())
  const { socket, rest: head } = await rawUpgrade(server.origin, [], '/?A2A-Version=1.0')
  t.teardown(() => socket.destroy())
  const reader = frameReader(socket, head)
  socket.write(Buffer.concat(Array.from({ length: 50 }, (_, i) => clientFrame(JSON.stringify(rpc(i))))))
  const frames = []
  for (let i = 0; i < 50; i++) frames.push(JSON.parse((await reader.next()).payload.toString()))
  const served = frames.filter(frame => frame.error.code === -32001)
  const refused = frames.filter(frame => frame.error.code === -32603)
  t.equal(served.length, 20)
  t.equal(refused.length, 30)
  t.same(refused[0].error.message, 'Rate limit exceeded: 20 calls per 60000 ms')
  t.equal(refused[0].error.data.length, 1)
  t.equal(refused[0].error.data[0]['@type'], 'type.googleapis.com/google.rpc.RetryInfo')
  t.match(refused[0].error.data[0].retryDelay, /^\d+(\.\d+)?s$/)
  socket.write(clientFrame(JSON.stringify(rpc(99))))
  const after = JSON.parse((await reader.next()).payload.toString())
  t.equal(after.id, 99)
  t.equal(after.error.code, -32603, 'still refused, and the connection is still open')
})

t.test('JSON-RPC over HTTP: 429 with Retry-After and the JSON-RPC error body', async t => {
  const server = await startServer({ rateLimit: { max: 2, timeWindow: 60_000 } })
  t.teardown(() => server.close())
  for (let i = 0; i < 2; i++) t.equal((await post(server.endpoint, rpc(i))).status, 200)
  const refused = await post(server.endpoint, rpc(3))
  t.equal(refused.status, 429)
  t.match(refused.headers.get('retry-after'), /^\d+$/)
  t.ok(Number(refused.headers.get('retry-after')) <= 60)
  t.same(refused.body.error.code, -32603)
  t.same(refused.body.id, 3)
})

t.test('REST: 429 with Retry-After and the error body; one budget across bindings', async t => {
  const server = await startServer({ rateLimit: { max: 3, timeWindow: 60_000 } })
  t.teardown(() => server.close())
  t.equal((await rest(server.endpoint, 'GET', '/tasks/x')).status, 404)
  t.equal((await post(server.endpoint, rpc(1))).status, 200)
  const ws = await connect(wsUrl(server.origin))
  t.equal((await ws.request('GetTask', { id: 'x' })).error.code, -32001)
  t.equal((await ws.request('GetTask', { id: 'x' })).error.code, -32603, 'the fourth call, on any binding, is refused')
  ws.close()
  const refused = await rest(server.endpoint, 'GET', '/tasks/x')
  t.equal(refused.status, 429)
  t.match(refused.headers.get('retry-after'), /^\d+$/)
  t.same(refused.body.error.code, 429)
  t.same(refused.body.error.status, 'RESOURCE_EXHAUSTED')
  t.same(refused.body.error.details[0]['@type'], 'type.googleapis.com/google.rpc.RetryInfo')
})

t.test('@fastify/rate-limit registered by the application before the plugin: its 429 is RateLimited with a RetryInfo, not an internal error', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'info', stream } })
  await fastify.register(fastifyRateLimit, { max: 2, timeWindow: 60_000 })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  t.teardown(() => fastify.close())
  for (let i = 0; i < 2; i++) t.equal((await fastify.inject({ method: 'POST', url: '/', headers: { ...V1, 'content-type': 'application/json' }, payload: JSON.stringify(rpc(i)) })).statusCode, 200)
  // Its message and Retry-After count the seconds left of the window.
  const refusal = (seconds: number) => ({
    message: `Rate limit exceeded, retry in ${seconds === 60 ? '1 minute' : `${seconds} seconds`}`,
    retryInfo: { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${seconds}s` }
  })
  const rpcReply = await fastify.inject({ method: 'POST', url: '/', headers: { ...V1, 'content-type': 'application/json' }, payload: JSON.stringify(rpc(3)) })
  const rpcSeconds = Number(rpcReply.headers['retry-after'])
  t.ok(rpcSeconds > 0 && rpcSeconds <= 60, 'Retry-After: the seconds left')
  const { message, retryInfo } = refusal(rpcSeconds)
  t.same({ status: rpcReply.statusCode, body: rpcReply.json() }, { status: 429, body: { jsonrpc: '2.0', id: null, error: { code: -32603, message, data: [retryInfo] } } }, 'JSON-RPC: 429 with the RetryInfo')
  const restReply = await fastify.inject({ method: 'GET', url: '/tasks/x', headers: V1 })
  const restRefusal = refusal(Number(restReply.headers['retry-after']))
  t.same({ status: restReply.statusCode, body: restReply.json() }, { status: 429, body: { error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: restRefusal.message, details: [restRefusal.retryInfo] } } }, 'REST: 429 RESOURCE_EXHAUSTED')
  t.same(lines.map(line => JSON.parse(line)).filter(line => line.level >= 50), [], 'nothing logged as an error')
})

t.test('the window resets', async t => {
  // A window of a second: the second call falls within it on a loaded machine.
  const server = await startServer({ rateLimit: { max: 1, timeWindow: 1000 } })
  t.teardown(() => server.close())
  t.equal((await post(server.endpoint, rpc(1))).status, 200)
  t.equal((await post(server.endpoint, rpc(2))).status, 429)
  await new Promise(resolve => setTimeout(resolve, 1100))
  t.equal((await post(server.endpoint, rpc(3))).status, 200)
})

t.test('per caller: the identity when one is authenticated, else the IP', async t => {
  const server = await startServer({ auth: { bearer: { verify: token => ({ subject: token }) } }, rateLimit: { max: 1, timeWindow: 60_000 } })
  t.teardown(() => server.close())
  const as = (who: string) => post(server.endpoint, rpc(1), { ...V1, authorization: `Bearer ${who}` })
  t.equal((await as('ann')).status, 200)
  t.equal((await as('ann')).status, 429)
  t.equal((await as('ben')).status, 200, 'another caller from the same IP has its own budget')
})

t.test('cacheSize: the in-memory store counts that many callers; past it the least recently counted starts over', async t => {
  const limited = (cacheSize?: number) => startServer({ rateLimit: { max: 1, timeWindow: 60_000, cacheSize, keyGenerator: context => context.serviceParams['x-caller'] ?? '' } })
  for (const [cacheSize, afterOthers] of [[2, 200], [3, 429], [undefined, 429]] as const) {
    const server = await limited(cacheSize)
    t.teardown(() => server.close())
    const as = async (caller: string) => (await post(server.endpoint, rpc(1), { ...V1, 'x-caller': caller })).status
    t.same([await as('ann'), await as('ann')], [200, 429], 'ann spends her budget')
    t.same([await as('ben'), await as('cid')], [200, 200])
    t.equal(await as('ann'), afterOthers, `cacheSize ${String(cacheSize)}: after two other callers ann is ${afterOthers === 200 ? 'forgotten' : 'still counted'}`)
  }
})

t.test('a custom store of @fastify/rate-limit\'s interface is used', async t => {
  const keys: string[] = []
  const server = await startServer({
    rateLimit: {
      max: 5,
      store: { incr (key, callback) { keys.push(key); callback(null, { current: 1, ttl: 1000 }) } }
    }
  })
  t.teardown(() => server.close())
  await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x') } })
  t.same(keys, ['ip:127.0.0.1'])
})

t.test('upgrades have a budget of their own per IP: past it a WebSocket is refused with 429 and Retry-After', async t => {
  const { refusedUpgrade } = await import('./helpers/ws.js')
  const server = await startServer({ rateLimit: { max: 2, timeWindow: 60_000 } })
  t.teardown(() => server.close())
  for (let i = 0; i < 2; i++) {
    const client = await connect(wsUrl(server.origin))
    t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'the call budget is apart')
    client.close()
  }
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.equal(refused.status, 429)
  t.match(refused.headers['retry-after'], /^\d+$/)
  t.same(refused.body.error.status, 'RESOURCE_EXHAUSTED')
})

t.test('a call auth refuses is spent from the budget of the caller as known without a credential: guessing stops at 429', async t => {
  const { refusedUpgrade } = await import('./helpers/ws.js')
  const server = await startServer({ auth: { bearer: { tokens: ['right'] }, refuseAtUpgrade: true }, rateLimit: { max: 3, timeWindow: 60_000 } })
  t.teardown(() => server.close())
  const guess = (n: number) => post(server.endpoint, rpc(n), { ...V1, authorization: `Bearer guess-${n}` })
  t.same([(await guess(1)).status, (await guess(2)).status, (await rest(server.endpoint, 'GET', '/tasks/x', { headers: { ...V1, authorization: 'Bearer guess-3' } })).status], [401, 401, 401])
  const refused = await guess(4)
  t.equal(refused.status, 429, 'one budget across bindings, for the IP')
  t.same(refused.body.error.data, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: refused.body.error.data[0].retryDelay }])
  t.match(refused.headers.get('retry-after'), /^\d+$/)
  t.equal((await post(server.endpoint, rpc(5), { ...V1, authorization: 'Bearer right' })).status, 200, 'the right credential has its identity\'s own budget')

  const upgrades = []
  for (let n = 0; n < 4; n++) upgrades.push((await refusedUpgrade(wsUrl(server.origin), { headers: { authorization: `Bearer guess-${n}` } })).status)
  t.same(upgrades, [401, 401, 401, 429], 'upgrades refused by auth are spent from the IP\'s budget of upgrades')
})

t.test('bad rateLimit options fail registration, naming the option', async t => {
  const options = (rateLimit: unknown) => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, rateLimit: rateLimit as never })
  const refusals: Array<[unknown, string]> = [
    [null, 'rateLimit: must be an object'],
    ['x', 'rateLimit: must be an object'],
    [{}, 'rateLimit.max: must be an integer >= 1'],
    [{ max: 5, keyGenerator: 5 }, 'rateLimit.keyGenerator: must be a function'],
    [{ max: 5, redis: {} }, 'rateLimit.redis: must be an ioredis client (with defineCommand)'],
    [{ max: 5, cacheSize: 0 }, 'rateLimit.cacheSize: must be an integer >= 1'],
    [{ max: 5, cacheSize: 10, store: { incr () {} } }, 'rateLimit.cacheSize: is for the in-memory store: not with store or redis'],
    [{ max: 5, timeWindow: 2 ** 31 }, 'rateLimit.timeWindow: must be at most 2147483647 ms'],
    [{ max: 5, storeTimeout: -1 }, 'rateLimit.storeTimeout: must be an integer >= 0']
  ]
  for (const [rateLimit, message] of refusals) {
    t.throws(() => options(rateLimit), { code: 'A2A_ERR_INVALID_OPTION', message: `Invalid option ${message}` }, message)
  }
})

t.test('rateLimit.redis with Redis stalled or out of reach: the call is Unavailable after storeTimeout, not held or an internal error', async t => {
  const url = await requireRedis(t)
  if (url === undefined) return
  const proxy = await faultProxy(url)
  t.teardown(() => proxy.close())
  const redis = new Redis(proxy.url)
  redis.on('error', () => {})
  t.teardown(() => redis.disconnect())
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'info', stream } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, rateLimit: { max: 1000, timeWindow: 1000, redis, storeTimeout: 200, keyGenerator: () => `test:stalled:${process.pid}` } })
  t.teardown(() => fastify.close())
  const server = { endpoint: await fastify.listen({ host: '127.0.0.1', port: 0 }) }
  t.equal((await post(server.endpoint, rpc(1))).body.error.code, -32001, 'counted in Redis')

  const unavailable = {
    code: -32603,
    message: 'Service unavailable: a service the agent needs cannot be reached',
    data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
  }
  proxy.stall()
  const stalled = await within(5000, post(server.endpoint, rpc(2)))
  t.not(stalled, 'late', 'answered, though Redis never answers')
  t.same(stalled !== 'late' && stalled.body, { jsonrpc: '2.0', id: 2, error: unavailable })
  const restReply = await within(5000, rest(server.endpoint, 'GET', '/tasks/x'))
  t.same(restReply !== 'late' && [restReply.status, restReply.body.error.status], [503, 'UNAVAILABLE'], 'REST: 503')
  t.match(lines.map(line => JSON.parse(line)).find(entry => entry.msg === 'A2A call failed'),
    { level: 50, err: { message: 'the rate-limit store gave no count within 200 ms', code: 'ETIMEDOUT' } }, 'the cause logged')

  // Out of reach: ioredis queues the command until its retries run out (20 reconnections, 10 s).
  proxy.mode = 'refuse'
  proxy.cut()
  const down = await within(5000, post(server.endpoint, rpc(3)))
  t.same(down !== 'late' && down.body, { jsonrpc: '2.0', id: 3, error: unavailable })
})

t.test('a store that counts after storeTimeout: the call is Unavailable, and the late count is ignored', async t => {
  let late: Promise<void> | undefined
  const server = await startServer({
    rateLimit: {
      max: 5,
      storeTimeout: 50,
      store: {
        incr (_key, callback) {
          late = new Promise(resolve => setTimeout(() => { callback(null, { current: 1, ttl: 1000 }); resolve() }, 150))
        }
      }
    }
  })
  t.teardown(() => server.close())
  const reply = await post(server.endpoint, rpc(1))
  t.same([reply.status, reply.body.error.message], [200, 'Service unavailable: a service the agent needs cannot be reached'])
  await late
  t.pass('the late count came, and nothing failed')
})

t.test('rateLimit.redis: ioredis\'s error when Redis is out of reach is Unavailable, not an internal error', async t => {
  const url = await requireRedis(t)
  if (url === undefined) return
  const proxy = await faultProxy(url)
  t.teardown(() => proxy.close())
  proxy.mode = 'refuse'
  // No retry: the command fails at once with MaxRetriesPerRequestError.
  const redis = new Redis(proxy.url, { maxRetriesPerRequest: 0 })
  redis.on('error', () => {})
  t.teardown(() => redis.disconnect())
  const server = await startServer({ rateLimit: { max: 1000, timeWindow: 1000, redis, storeTimeout: 0, keyGenerator: () => `test:down:${process.pid}` } })
  t.teardown(() => server.close())
  const reply = await within(5000, post(server.endpoint, rpc(1)))
  t.same(reply !== 'late' && [reply.status, reply.body.error], [200, {
    code: -32603,
    message: 'Service unavailable: a service the agent needs cannot be reached',
    data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
  }])
})
