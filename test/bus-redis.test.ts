// The Redis event bus: two instances sharing PostgreSQL and Redis act as one for
// streams. A stream opened on B for a task running on A gets the snapshot, then A's
// events in order; local listeners keep the in-memory bus's synchronous delivery.
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t from 'tap'
import { a2aWebSocket, openPostgresStores, RedisEventBus } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { eventually, userMessage } from './helpers/server.js'
import { connect, wsUrl } from './helpers/ws.js'

const url = await requirePostgres(t)
if (url !== undefined) {
  const schema = uniqueSchema('bus')
  const redis: Redis[] = []
  const redisConnection = () => {
    const connection = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: false, maxRetriesPerRequest: 2 })
    redis.push(connection)
    return connection
  }
  const prefix = `a2a:test:${process.pid}:`

  async function instance (): Promise<{ fastify: FastifyInstance, origin: string }> {
    const stores = await openPostgresStores({ connectionString: url as string, schema })
    const publisher = redisConnection()
    const bus = new RedisEventBus({ publisher, subscriber: redisConnection(), channelPrefix: prefix })
    const fastify = Fastify()
    await fastify.register(a2aWebSocket, {
      executor: conformanceAgent, card: conformanceCard, ...stores, bus, recoverTasks: false
    })
    fastify.addHook('onClose', async () => { await stores.close() })
    await fastify.listen({ host: '127.0.0.1', port: 0 })
    return { fastify, origin: `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}` }
  }

  const a = await instance()
  const b = await instance()
  t.teardown(async () => {
    await a.fastify.close()
    await b.fastify.close()
    for (const connection of redis) connection.disconnect()
    await dropSchemas(url, [schema])
  })

  t.test('a stream on B of a task running on A: the snapshot, then every event of A in order', async t => {
    const onA = await connect(wsUrl(a.origin))
    const onB = await connect(wsUrl(b.origin))
    t.teardown(() => { onA.close(); onB.close() })
    const onAStream = onA.stream('SendStreamingMessage', { message: userMessage('sleep 400') }, 'sleeping')
    let task: any
    await eventually(async () => {
      [task] = (await onB.request('ListTasks', { status: 'TASK_STATE_WORKING' })).result.tasks
      return task !== undefined
    })
    const frames = await onB.stream('SubscribeToTask', { id: task.id })
    const fromA = (await onAStream).slice(2)
    t.equal(frames[0].result.task.id, task.id)
    t.equal(frames[0].result.task.status.state, 'TASK_STATE_WORKING')
    t.same(frames.slice(1).map(frame => frame.result), fromA.map(frame => frame.result), 'B saw what A sent after the snapshot, event for event')
    t.same(frames.at(-1).result, { status: 'stream_complete' })
    t.equal(frames.at(-2).result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
    await eventually(() => b.fastify.a2a.bus.listenerCount() === 0)
  })
}
