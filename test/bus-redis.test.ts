// The Redis event bus (redisBus): two instances sharing PostgreSQL and Redis act as one
// for streams (the contract of test/helpers/bus-contract.ts); its connections' errors go to onError;
// close() ends within closeTimeout whatever Redis does (a proxy in between stalls or refuses);
// once a lost connection is back, a stream of a task that ended meanwhile gets it as stored.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { redisBus } from '../lib/index.js'
import { busContract } from './helpers/bus-contract.js'
import { faultProxy, within } from './helpers/fault-proxy.js'
import { streamAcrossGap } from './helpers/bus-gap.js'
import { postgresProxy } from './helpers/postgres.js'
import { requireRedis } from './helpers/redis.js'
import { eventually } from './helpers/server.js'
import { timeoutsMadeIn } from './helpers/timers.js'

const url = await requireRedis(t)
if (url !== undefined) await busContract(t, (_, schema) => redisBus({ url, channelPrefix: `a2a:test:${schema}:` }))

t.test('onError receives the errors of the connections the bus opened', async t => {
  const errors: Error[] = []
  // Nothing listens on port 1: both connections fail, and ioredis keeps retrying.
  const bus = redisBus({ url: 'redis://127.0.0.1:1', onError: (error) => errors.push(error) })
  await eventually(() => errors.length >= 2)
  await bus.close()
  t.ok(errors.every(error => (error as NodeJS.ErrnoException).code === 'ECONNREFUSED'), 'connection refused, reported rather than printed')
})

t.test('close() ends at once when Redis is out of reach, with a subscription queued', async t => {
  if (url === undefined) return
  const proxy = await faultProxy(url)
  t.teardown(() => proxy.close())
  const timeouts = timeoutsMadeIn(t, 'bus/factories')
  const prefix = 'a2a:test:close-down:'
  const bus = redisBus({ url: proxy.url, channelPrefix: prefix, onError: () => {} })
  await connected(t, bus, prefix)
  proxy.mode = 'refuse'
  const made = proxy.attempts()
  proxy.cut()
  await eventually(() => proxy.attempts() >= made + 2) // both connections tried again, and were refused
  // ioredis queues these until it connects again, and its QUIT would wait behind them until
  // their retries run out (10 s).
  bus.subscribe('queued', () => {})()
  t.not(await within(3000, bus.close()), 'late', 'closed within the bound')
  t.same(timeouts.filter(timeout => timeout.delay === 1000), [], 'no QUIT waited for: nothing to wait for on a connection not ready')
  t.equal(proxy.count(), 0, 'no connection left')
})

t.test('close() drops a connection whose QUIT Redis does not answer within closeTimeout', async t => {
  if (url === undefined) return
  const proxy = await faultProxy(url)
  t.teardown(() => proxy.close())
  const timeouts = timeoutsMadeIn(t, 'bus/factories')
  const prefix = 'a2a:test:close-stalled:'
  const bus = redisBus({ url: proxy.url, channelPrefix: prefix, closeTimeout: 200, onError: () => {} })
  await connected(t, bus, prefix)
  proxy.stall()
  t.not(await within(5000, bus.close()), 'late', 'closed, though Redis never answers')
  const waits = timeouts.filter(timeout => timeout.delay === 200)
  await eventually(() => waits.every(timeout => timeout.ended))
  t.same(waits.map(timeout => timeout.fired), [true, true], 'each connection waited closeTimeout for its QUIT, then was dropped')
  await eventually(() => proxy.count() === 0)
})

t.test('close() quits a ready connection, and leaves no timer behind', async t => {
  if (url === undefined) return
  const proxy = await faultProxy(url)
  t.teardown(() => proxy.close())
  const timeouts = timeoutsMadeIn(t, 'bus/factories')
  const prefix = 'a2a:test:close-ready:'
  const bus = redisBus({ url: proxy.url, channelPrefix: prefix })
  await connected(t, bus, prefix)
  await bus.close()
  const waits = timeouts.filter(timeout => timeout.delay === 1000)
  await eventually(() => waits.every(timeout => timeout.ended))
  t.same(waits.map(timeout => timeout.fired), [false, false], 'both quit before the default closeTimeout, whose timers are cleared')
  await eventually(() => proxy.count() === 0)
})

t.test('close() ends when a connection is lost during its QUIT', async t => {
  if (url === undefined) return
  const proxy = await faultProxy(url)
  t.teardown(() => proxy.close())
  const prefix = 'a2a:test:close-lost:'
  const bus = redisBus({ url: proxy.url, channelPrefix: prefix, closeTimeout: 60_000, onError: () => {} })
  await connected(t, bus, prefix)
  proxy.stall()
  const closing = bus.close()
  setTimeout(() => proxy.cut(), 100)
  t.not(await within(5000, closing), 'late')
})

t.test('closeTimeout is an integer >= 0', async t => {
  t.throws(() => redisBus({ url: 'redis://127.0.0.1:1', closeTimeout: -1 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option closeTimeout: must be an integer >= 0' })
  t.throws(() => redisBus({ url: 'redis://127.0.0.1:1', closeTimeout: 1.5 }), { code: 'A2A_ERR_INVALID_OPTION' })
})

/** Once both connections of `bus` are ready: its subscription made, and its publish seen on Redis. */
async function connected (t: Test, bus: ReturnType<typeof redisBus>, prefix: string): Promise<void> {
  bus.subscribe('warm', () => {})
  await bus.ready('warm')
  const watcher = new Redis(url as string)
  t.teardown(() => watcher.disconnect())
  await watcher.subscribe(`${prefix}seen`)
  const seen = new Promise(resolve => watcher.once('message', resolve))
  bus.publish('seen', { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } })
  await seen
}

if (url !== undefined) {
  t.test('a stream on B whose Redis connection is lost as the task ends on A: once B subscribes again it gets the task as stored, and ends', async t => {
    let down = false
    // A plain TCP proxy (the PostgreSQL tests' own), in front of Redis for B.
    const proxy = await postgresProxy(url, () => down ? 'refuse' : 'forward')
    t.teardown(() => proxy.close())
    const channelPrefix = `a2a:test:gap:${randomBytes(4).toString('hex')}:`
    const busB = redisBus({ url: proxy.url, channelPrefix, onError: () => {} })
    let resubscribed = 0
    const stop = busB.onResubscribe(() => resubscribed++)
    t.teardown(stop)
    await eventually(() => resubscribed === 1)
    const { events, ended } = await streamAcrossGap(t, redisBus({ url, channelPrefix }), busB, async () => {
      down = true
      proxy.cut()
    }, () => { down = false })
    t.ok(ended, 'the stream ended')
    t.same(events.map(({ data }) => data.result.task === undefined ? data : [data.result.task.status.state, data.result.task.artifacts?.[0].parts[0].text]), [
      ['TASK_STATE_WORKING', undefined],
      ['TASK_STATE_COMPLETED', 'done']
    ], 'the snapshot, then the task as stored once B subscribed again')
    t.equal(resubscribed, 2, 'the bus told its listeners at its first connection, and once it was back')
  })
}
