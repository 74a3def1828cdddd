// Bench figure, not a test: a stream of appended artifact chunks through the PostgreSQL
// store. An append is one inserted row plus the task's version bumped in place (a HOT
// update), so 20,000 chunks should take about twice as long as 10,000 (a ratio near 2
// means linear; a rewrite of the artifact per chunk would be quadratic, near 4). `npm run bench:store`; A2A_BENCH_POSTGRES overrides the database.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openPostgresStores } from '../lib/index.js'

const url = process.env.A2A_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = `a2a_bench_${randomBytes(4).toString('hex')}`
const scope = { tenant: '' }
const stores = await openPostgresStores({ connectionString: url, schema })

const WINDOW = 1_000

async function stream (chunks: number): Promise<number> {
  const id = `bench-${chunks}`
  await stores.taskStore.create({ id, contextId: 'bench', status: { state: 'TASK_STATE_WORKING' } }, scope)
  // Time per window of 1,000 chunks: a cost that grows with the artifact shows as later windows getting slower.
  const windows: number[] = []
  const start = process.hrtime.bigint()
  let windowStart = start
  for (let i = 0; i < chunks; i++) {
    await stores.taskStore.update(id, { kind: 'artifact', artifact: { artifactId: 'stream', parts: [{ text: `chunk ${i}` }] }, append: i > 0 }, scope)
    if ((i + 1) % WINDOW === 0) {
      const now = process.hrtime.bigint()
      windows.push(Number(now - windowStart) / 1e6)
      windowStart = now
    }
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  const parts = (await stores.taskStore.get(id, scope))?.artifacts?.[0]?.parts ?? []
  if (parts.length !== chunks || parts[chunks - 1]?.text !== `chunk ${chunks - 1}`) throw new Error(`${id}: the artifact came back wrong`)
  const perChunk = (windowMs: number) => `${(windowMs * 1000 / WINDOW).toFixed(0)} µs`
  console.log(`${chunks} chunks: ${ms.toFixed(0)} ms, ${(ms * 1000 / chunks).toFixed(1)} µs per chunk ` +
    `(first ${WINDOW}: ${perChunk(windows[0] ?? 0)}, last ${WINDOW}: ${perChunk(windows.at(-1) ?? 0)} per chunk)`)
  return ms
}

try {
  await stream(1_000) // warm-up: connections, plans, caches
  const small = await stream(10_000)
  const large = await stream(20_000)
  console.log(`ratio 20,000 / 10,000: ${(large / small).toFixed(2)} (linear ≈ 2)`)
} finally {
  await stores.close()
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(`DROP SCHEMA ${pg.escapeIdentifier(schema)} CASCADE`)
  await client.end()
}
