// The cluster bench (issue 11): a stream fanned out across instances. A client on A runs a
// stream of stamped chunks (bench/cluster-instance.ts); a subscriber follows it, on A itself
// when A is alone (the in-memory bus), or on B when A and B share the Redis bus. Reported:
// the events/s the subscriber receives, and each event's delivery latency (median, p99),
// B's over A-alone's: the cost of the Redis hop. Both set-ups store tasks in PostgreSQL,
// which a subscriber on another instance needs.
import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import pg from 'pg'
import type WebSocket from 'ws'
import { wallClock } from './cluster-instance.js'
import { percentile, Samples, type Figure } from './harness/stats.js'
import { closeSocket, openSocket } from './load/ws.js'
import type { Row } from './report.js'
import type { Plan } from './scenarios.js'

const POSTGRES = process.env.BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS = process.env.BENCH_REDIS ?? 'redis://127.0.0.1:6379'
const INSTANCE_ENTRY = fileURLToPath(new URL('./cluster-instance.js', import.meta.url))
/** Chunks per stream: each is a PostgreSQL write on A. */
const CHUNKS = { full: 5_000, quick: 1_000 }
const WARMUP_CHUNKS = 200
const STREAM_TIMEOUT_MS = 300_000

export type ClusterFigureName = `cluster.${'alone' | 'across'}.${'eventsPerSec' | 'p50' | 'p99'}`

export interface ClusterResults {
  figures: Partial<Record<ClusterFigureName, Figure>>
  failures?: Record<string, string>
  rows: Row[]
}

interface Instance {
  origin: string
  stop (): Promise<void>
}

interface Delivery {
  eventsPerSec: number
  /** Per chunk, from its emission on A to its arrival at the subscriber, ms. */
  latencies: number[]
}

export async function clusterFanOut (plan: Plan): Promise<ClusterResults> {
  const missing = await unavailable()
  if (missing !== undefined) return { figures: {}, failures: { cluster: missing }, rows: [] }
  const schema = `a2a_bench_cluster_${randomBytes(4).toString('hex')}`
  const env = { BENCH_POSTGRES: POSTGRES, BENCH_SCHEMA: schema }
  const samples = new Samples<ClusterFigureName>()
  const chunks = CHUNKS[plan.mode]
  const instances: Instance[] = []
  const start = async (extra: Record<string, string> = {}) => {
    const instance = await startInstance({ ...env, ...extra })
    instances.push(instance)
    return instance
  }
  try {
    // Alone in a schema of its own: the cluster's sweep takes a task that no lease names, as an
    // instance outside the cluster runs it, for a dead instance's and fails it.
    const alone = await start({ BENCH_SCHEMA: `${schema}_alone` })
    const a = await start({ BENCH_REDIS: REDIS, BENCH_PREFIX: `${schema}:` })
    const b = await start({ BENCH_REDIS: REDIS, BENCH_PREFIX: `${schema}:` })
    await deliver(alone, alone, WARMUP_CHUNKS)
    await deliver(a, b, WARMUP_CHUNKS)
    // Turn about, so that the machine's drift falls on both set-ups alike.
    for (let repetition = 0; repetition < plan.repetitions; repetition++) {
      for (const [name, sender, subscriber] of [['alone', alone, alone], ['across', a, b]] as const) {
        const { eventsPerSec, latencies } = await deliver(sender, subscriber, chunks)
        samples.add(`cluster.${name}.eventsPerSec`, eventsPerSec)
        samples.add(`cluster.${name}.p50`, percentile(latencies, 0.5))
        samples.add(`cluster.${name}.p99`, percentile(latencies, 0.99))
      }
    }
  } catch (error) {
    return { figures: samples.figures(), failures: { cluster: (error as Error).message }, rows: [] }
  } finally {
    await Promise.all(instances.map(instance => instance.stop()))
    await dropSchema(schema)
    await dropSchema(`${schema}_alone`)
  }
  const figures = samples.figures()
  return { figures, rows: clusterRows(figures, chunks) }
}

function clusterRows (figures: Record<ClusterFigureName, Figure>, chunks: number): Row[] {
  const m = (name: ClusterFigureName) => figures[name].median
  const ms = (value: number) => `${value.toFixed(2)} ms`
  const signedMs = (value: number) => `${value < 0 ? '−' : '+'}${Math.abs(value).toFixed(2)} ms`
  const row = (scenario: string, across: string, alone: string, ratio: number): Row => ({ scenario, ours: across, peer: '', ceiling: alone, ratio: `${ratio.toFixed(2)}×`, target: '—', verdict: '—' })
  return [
    row(`Cluster: ${chunks / 1000}k-chunk stream, events/s at a subscriber on B (Redis bus), vs on A alone`,
      Math.round(m('cluster.across.eventsPerSec')).toLocaleString('en-US'), Math.round(m('cluster.alone.eventsPerSec')).toLocaleString('en-US'),
      m('cluster.across.eventsPerSec') / m('cluster.alone.eventsPerSec')),
    ...(['p50', 'p99'] as const).map(quantile => row(
      `Cluster: delivery latency ${quantile === 'p50' ? 'median' : 'p99'}, on B vs on A alone (the Redis hop: ${signedMs(m(`cluster.across.${quantile}`) - m(`cluster.alone.${quantile}`))})`,
      ms(m(`cluster.across.${quantile}`)), ms(m(`cluster.alone.${quantile}`)), m(`cluster.across.${quantile}`) / m(`cluster.alone.${quantile}`)))
  ]
}

/**
 * Runs a stream of `chunks` on `sender` and follows it with SubscribeToTask on
 * `subscriber` from the first frame on; measures what the subscriber receives.
 */
async function deliver (sender: Instance, subscriber: Instance, chunks: number): Promise<Delivery> {
  const sending = await openSocket(wsUrl(sender.origin))
  const following = await openSocket(wsUrl(subscriber.origin))
  try {
    const ended = (socket: WebSocket, id: string) => new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        const frame = JSON.parse(data.toString())
        if (frame.id !== id) return
        if (frame.error !== undefined) reject(new Error(`${id}: ${JSON.stringify(frame.error)}`))
        else if (frame.result?.status === 'stream_complete') resolve()
      })
    })
    const arrivals: Array<{ at: number, arrived: number }> = []
    following.on('message', (data) => {
      const arrived = wallClock()
      const frame = JSON.parse(data.toString())
      const at = frame.result?.artifactUpdate?.artifact.parts[0]?.data?.at
      if (typeof at === 'number') arrivals.push({ at, arrived })
    })
    sending.once('message', (data) => {
      const id = JSON.parse(data.toString()).result.task.id
      following.send(JSON.stringify({ jsonrpc: '2.0', id: 'follow', method: 'SubscribeToTask', params: { id } }))
    })
    const done = Promise.all([ended(sending, 'send'), ended(following, 'follow')])
    sending.send(JSON.stringify({ jsonrpc: '2.0', id: 'send', method: 'SendStreamingMessage', params: { message: { messageId: randomBytes(8).toString('hex'), role: 'ROLE_USER', parts: [{ text: String(chunks) }] } } }))
    await withTimeout(done, STREAM_TIMEOUT_MS)
    const first = arrivals[0]
    const last = arrivals.at(-1)
    if (first === undefined || last === undefined || arrivals.length < chunks / 2) throw new Error(`the subscriber received ${arrivals.length} of ${chunks} chunks`)
    return { eventsPerSec: (arrivals.length - 1) / ((last.arrived - first.arrived) / 1000), latencies: arrivals.map(({ at, arrived }) => arrived - at) }
  } finally {
    await Promise.all([closeSocket(sending), closeSocket(following)])
  }
}

const wsUrl = (origin: string) => origin.replace(/^http/, 'ws') + '/?A2A-Version=1.0'

function withTimeout<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no end within ${ms} ms`)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

async function startInstance (env: Record<string, string>): Promise<Instance> {
  const child: ChildProcess = fork(INSTANCE_ENTRY, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = once(child, 'exit')
  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (message: { type?: string, port?: number }) => { if (message.type === 'listening') resolve(message.port as number) })
    exited.then(([code]) => reject(new Error(`a cluster instance exited (${String(code)}) before listening`)), () => {})
  })
  return {
    origin: `http://127.0.0.1:${port}`,
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await exited
    }
  }
}

/** Why the bench cannot run here, or undefined. */
async function unavailable (): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: POSTGRES, connectionTimeoutMillis: 2000 })
  const redis = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  try {
    await client.connect()
    await redis.connect()
    await redis.ping()
    return undefined
  } catch (error) {
    return `needs PostgreSQL (${POSTGRES}) and Redis (${REDIS}), BENCH_POSTGRES and BENCH_REDIS: ${(error as Error).message}`
  } finally {
    await client.end().catch(() => {})
    redis.disconnect()
  }
}

async function dropSchema (schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`).finally(() => client.end())
}
