// `npm run fuzz -- --runs N [--seed S] [--binding websocket|jsonrpc|rest]`: the properties of
// test/fuzz-*.test.ts for as many cases as wanted (N in total, shared by the bindings, which
// run at once), against the server of test/fuzz/server.ts in a child process.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import fc from 'fast-check'
import { jsonRpcFuzzer, restFuzzer, rpcFrames, restCases, seedTasks, webSocketFuzzer, type Fuzzer } from '../helpers/fuzz.js'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '30000' }, seed: { type: 'string' }, binding: { type: 'string', multiple: true } } })
const total = Number(values.runs)
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed)
const bindings = values.binding ?? ['websocket', 'jsonrpc', 'rest']
if (!Number.isSafeInteger(total) || total < 1 || Number.isNaN(seed)) throw new Error('--runs must be a positive integer, --seed a number')

const child = spawn(process.execPath, ['--import=@tapjs/typescript/import', fileURLToPath(new URL('./server.ts', import.meta.url))], {
  env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
  stdio: ['ignore', 'pipe', 'inherit']
})
let output = ''
child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
const exited = once(child, 'exit')
const origin = await new Promise<string>((resolve, reject) => {
  child.stdout.on('data', () => {
    const match = /^listening on (\S+)$/m.exec(output)
    if (match !== null) resolve(match[1] as string)
  })
  void exited.then(([code]) => reject(new Error(`the fuzz server exited (${String(code)}) before listening`)))
})
const [taskId] = await seedTasks(origin) as [string]

const perBinding = Math.ceil(total / bindings.length)
const started = Date.now()
const counts: Record<string, number> = {}
/** Per binding, how its cases were answered (Fuzzer.outcomes): streams fuzzed, refusals... */
const outcomes: Record<string, Record<string, number>> = {}

async function fuzz<Case> (name: string, fuzzer: Fuzzer<Case>, cases: fc.Arbitrary<Case>): Promise<void> {
  counts[name] = 0
  outcomes[name] = fuzzer.outcomes
  try {
    await fc.assert(fc.asyncProperty(cases, async (input) => {
      await fuzzer.run(input)
      counts[name] = (counts[name] ?? 0) + 1
    }), { numRuns: perBinding, seed, endOnFailure: false })
  } finally {
    await fuzzer.close()
  }
}

const progress = setInterval(() => {
  process.stderr.write(`${Math.round((Date.now() - started) / 1000)} s: ${JSON.stringify(counts)}\n`)
}, 30_000)
let failure: unknown
try {
  await Promise.all(bindings.map(binding => {
    switch (binding) {
      case 'websocket': return fuzz(binding, webSocketFuzzer(origin, taskId), rpcFrames([taskId]))
      case 'jsonrpc': return fuzz(binding, jsonRpcFuzzer(origin, taskId), rpcFrames([taskId]))
      case 'rest': return fuzz(binding, restFuzzer(origin, taskId), restCases([taskId]))
      default: throw new Error(`unknown binding ${binding}`)
    }
  }))
} catch (error) {
  failure = error
} finally {
  clearInterval(progress)
}
const alive = child.exitCode === null
child.kill('SIGTERM')
const [code] = await exited
const cases = Object.values(counts).reduce((sum, count) => sum + count, 0)
const seconds = ((Date.now() - started) / 1000).toFixed(0)
const clean = failure === undefined && alive && code === 0 && /closed: 0 executions running/.test(output)
console.log(`fuzz: ${cases} cases ${JSON.stringify(counts)} in ${seconds} s, seed ${seed}: ${clean ? 'passed' : 'FAILED'}\noutcomes: ${JSON.stringify(outcomes)}`)
if (!clean) {
  console.log(failure ?? `the server ${alive ? `exited ${String(code)} on SIGTERM` : 'died during the run'}: ${output}`)
  process.exitCode = 1
}
