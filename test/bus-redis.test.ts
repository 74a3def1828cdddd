// The Redis event bus (redisBus): two instances sharing PostgreSQL and Redis act as one
// for streams (the contract of test/helpers/bus-contract.ts); its connections' errors go to
// onError; once a lost connection is back, a stream of a task that ended meanwhile gets it as stored.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { redisBus } from '../lib/index.js'
import { busContract } from './helpers/bus-contract.js'
import { streamAcrossGap } from './helpers/bus-gap.js'
import { postgresProxy } from './helpers/postgres.js'
import { requireRedis } from './helpers/redis.js'
import { eventually } from './helpers/server.js'

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
