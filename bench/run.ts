// `npm run bench` (full) and `npm run bench:quick`: runs the scenarios of issue 8, each
// server in a process of its own and the load from this one, all on 127.0.0.1; prints
// the table and writes the raw samples to bench/results/. `--only=p1,p3` runs some of
// the scenarios (P1 and the REST row are one HTTP run: `p1` or `rest`).
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { clusterFanOut } from './cluster.js'
import { handlerAllocation } from './handler-alloc.js'
import { buildRows, ratiosPerRepetition, renderTable, type Row } from './report.js'
import { httpUnary, idleConnections, streaming, webSocketUnary, type Plan } from './scenarios.js'
import type { Figure } from './harness/stats.js'

const FULL: Plan = {
  mode: 'full',
  repetitions: 3,
  httpSeconds: 10,
  // Long enough for this project's server to pass its first 10,000 tasks (JIT, a memory store
  // filling up): what it does afterwards, for as long as it runs, is what is measured.
  warmupSeconds: 5,
  httpConnections: 50,
  pipelineMs: 5000,
  inFlight: 64,
  streamChunks: [10_000, 20_000],
  // A 10k stream takes 60–140 ms here: one pair's ratio moves by a third with the machine.
  streamWarmups: 3,
  streamRepetitions: 7,
  // Its appends cost time in proportion to the artifact (quadratic overall): 20,000 would take minutes.
  peerStreamChunks: [1_000, 2_000],
  idleCounts: [1_000, 10_000],
  idleCeiling: true,
  getTaskCalls: 1000
}

const QUICK: Plan = {
  ...FULL,
  mode: 'quick',
  repetitions: 1,
  httpSeconds: 2,
  warmupSeconds: 1,
  pipelineMs: 2000,
  peerStreamChunks: [500, 1_000],
  streamWarmups: 1,
  streamRepetitions: 1,
  // Opening connections takes most of the quick budget: 5,000 of ours, none of the ceiling's.
  idleCounts: [1_000, 5_000],
  idleCeiling: false,
  getTaskCalls: 200
}

interface ScenarioResults {
  figures: Partial<Record<string, Figure>>
  failures?: Record<string, string>
  /** Rows of a scenario that reports its own (outside issue 8's table). */
  rows?: Row[]
}

const figuresOnly = (run: (plan: Plan) => Promise<Record<string, Figure>>) => async (plan: Plan): Promise<ScenarioResults> => ({ figures: await run(plan) })

const scenarios: Array<{ keys: string[], title: string, run: (plan: Plan) => Promise<ScenarioResults> }> = [
  { keys: ['p1', 'rest'], title: 'P1 + REST: unary SendMessage over HTTP', run: figuresOnly(httpUnary) },
  { keys: ['p2'], title: 'P2: unary SendMessage over WebSocket', run: figuresOnly(webSocketUnary) },
  { keys: ['p3'], title: 'P3: streams of appended chunks', run: streaming },
  { keys: ['p4'], title: 'P4: idle WebSocket connections', run: figuresOnly(idleConnections) },
  { keys: ['alloc'], title: 'Handler: allocation per SendMessage', run: handlerAllocation },
  { keys: ['cluster'], title: 'Cluster: a stream fanned out across instances (PostgreSQL, Redis)', run: clusterFanOut }
]

const quick = process.argv.includes('--quick')
const plan = quick ? QUICK : FULL
const only = process.argv.find(arg => arg.startsWith('--only='))?.slice('--only='.length).split(',')
const selected = scenarios.filter(scenario => only === undefined || scenario.keys.some(key => only.includes(key)))

const startedAt = new Date()
const loadBefore = os.loadavg()
const began = Date.now()
const figures: Partial<Record<string, Figure>> = {}
const failures: Record<string, string> = {}
const ownRows: Row[] = []
for (const scenario of selected) {
  const started = Date.now()
  process.stderr.write(`${scenario.title} …`)
  const results = await scenario.run(plan)
  Object.assign(figures, results.figures)
  Object.assign(failures, results.failures)
  ownRows.push(...results.rows ?? [])
  process.stderr.write(` ${((Date.now() - started) / 1000).toFixed(0)} s\n`)
}
const loadAfter = os.loadavg()

const rows = [...buildRows(figures, failures, { ours: plan.streamChunks, peer: plan.peerStreamChunks }, plan.idleCounts), ...ownRows]
const loads = (values: number[]) => values.map(value => value.toFixed(2)).join(' ')
console.log(`\n${plan.mode} run, ${startedAt.toISOString()}, ${plan.repetitions === 1 ? '1 repetition (quick: not a median)' : `median of ${plan.repetitions} repetitions (P3 on this project: ${plan.streamRepetitions}, after ${plan.streamWarmups} warm-up streams)`}, ` +
  `${((Date.now() - began) / 1000).toFixed(0)} s; load average ${loads(loadBefore)} before, ${loads(loadAfter)} after; ` +
  `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, Node ${process.version}\n`)
console.log(renderTable(rows))
for (const [name, reason] of Object.entries(failures)) console.log(`\n${name} failed: ${reason}`)
// Less disturbed by other work on the machine than throughput: what each call cost the server.
const microseconds = (value: number) => value < 10 ? value.toFixed(1) : Math.round(value).toString()
const cpu = Object.entries(figures).filter(([name]) => name.endsWith('.cpu'))
if (cpu.length > 0) console.log(`\nserver CPU per call (p3: per event of the large stream): ${cpu.map(([name, value]) => `${name.slice(0, -'.cpu'.length)} ${microseconds(value?.median ?? 0)} µs`).join(', ')}`)
const perRepetition = ratiosPerRepetition(figures)
if (perRepetition.length > 0) console.log(`\nratios per repetition (the servers loaded in turn): ${perRepetition.map(({ label, ratios }) => `${label} ${ratios.map(ratio => ratio.toFixed(3)).join(' / ')}`).join('; ')}`)

const resultsDir = fileURLToPath(new URL('../../bench/results/', import.meta.url))
const file = `${resultsDir}${quick ? 'latest-quick.json' : 'latest.json'}`
await mkdir(resultsDir, { recursive: true })
await writeFile(file, JSON.stringify({
  date: startedAt.toISOString(),
  seconds: (Date.now() - began) / 1000,
  loadAverage: { before: loadBefore, after: loadAfter },
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
  plan,
  scenarios: selected.map(scenario => scenario.title),
  figures,
  failures,
  perRepetition,
  rows
}, null, 2) + '\n')
console.log(`\nraw results: ${file}`)
// Keep-alive sockets of fetch and autocannon must not hold the process open.
process.exit(0)
