// One instance for the cluster bench (bench/cluster.ts), in a process of its own: the
// plugin over PostgreSQL, with the Redis bus and the cluster when BENCH_REDIS is set (a
// single-instance deployment otherwise: the in-memory bus). Its executor stamps every
// chunk with the time it was emitted (a wall clock every process of the machine shares),
// so a client tells each event's delivery latency. Reports its port over IPC.
import { performance } from 'node:perf_hooks'
import Fastify from 'fastify'
import { a2aWebSocket, openPostgresStores, redisBus, type AgentExecutor } from '../lib/index.js'
import { conformanceCard } from '../examples/agent.js'

export const wallClock = (): number => performance.timeOrigin + performance.now()

/** The text is the number of chunks; each chunk is one data part `{ at }`. */
const stampedStream: AgentExecutor = {
  async execute (context, events) {
    const count = Number.parseInt(context.message.parts[0]?.text ?? '', 10) || 0
    await events.working()
    for (let i = 1; i <= count; i++) {
      await events.artifact({ artifactId: 'stream', parts: [{ data: { at: wallClock() } }] }, { append: i > 1, lastChunk: i === count })
    }
    await events.completed()
  }
}

async function main (): Promise<void> {
  const { BENCH_POSTGRES, BENCH_SCHEMA, BENCH_REDIS, BENCH_PREFIX } = process.env
  const stores = await openPostgresStores({ connectionString: BENCH_POSTGRES as string, schema: BENCH_SCHEMA })
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, {
    executor: stampedStream,
    card: conformanceCard,
    taskStore: stores.taskStore,
    pushConfigStore: stores.pushConfigStore,
    ...(BENCH_REDIS === undefined ? {} : { bus: redisBus({ url: BENCH_REDIS, channelPrefix: BENCH_PREFIX }), cluster: { store: stores.clusterStore } }),
    // A long stream must not end for a reader a little behind.
    maxQueuedEvents: 1_000_000
  })
  fastify.addHook('onClose', async () => { await stores.close() })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  process.send?.({ type: 'listening', port: (fastify.server.address() as { port: number }).port })
  // The bench is gone, or done with this instance.
  const stop = () => { fastify.close().finally(() => process.exit(0)) }
  process.on('disconnect', stop)
  process.on('SIGTERM', stop)
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
