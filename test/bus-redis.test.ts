// The Redis event bus (redisBus): two instances sharing PostgreSQL and Redis act as one
// for streams (the contract of test/helpers/bus-contract.ts).
import t from 'tap'
import { redisBus } from '../lib/index.js'
import { busContract } from './helpers/bus-contract.js'
import { requireRedis } from './helpers/redis.js'

const url = await requireRedis(t)
if (url !== undefined) await busContract(t, (_, schema) => redisBus({ url, channelPrefix: `a2a:test:${schema}:` }))
