// The Redis event bus (redisBus): two instances sharing PostgreSQL and Redis act as one
// for streams (the contract of test/helpers/bus-contract.ts); its connections' errors go to onError.
import t from 'tap'
import { redisBus } from '../lib/index.js'
import { busContract } from './helpers/bus-contract.js'
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
