// Issue 9 §1: fuzzed JSON-RPC bodies over HTTP against a live server. Each case must get
// exactly the answer the spec requires, and the next valid call must still be served.
// `npm run fuzz -- --runs N` runs the same property as long as wanted.
import fc from 'fast-check'
import t from 'tap'
import { jsonRpcFuzzer, rpcFrames, fuzzServerOptions, seedTasks } from './helpers/fuzz.js'
import { startServer } from './helpers/server.js'

const RUNS = 1200
const unhandled: unknown[] = []
process.on('unhandledRejection', (reason) => { unhandled.push(reason) })

t.test(`${RUNS} fuzzed JSON-RPC bodies over HTTP, each answered as the spec says`, async t => {
  const server = await startServer(fuzzServerOptions)
  t.teardown(() => server.close())
  const [taskId] = await seedTasks(server.origin) as [string]
  const fuzzer = jsonRpcFuzzer(server.origin, taskId)
  // A fixed seed keeps CI reproducible; npm run fuzz explores new ones.
  await fc.assert(fc.asyncProperty(rpcFrames([taskId]), input => fuzzer.run(input)), { numRuns: RUNS, seed: 20260901 })
  await fuzzer.close()
  t.same(unhandled, [], 'no unhandled rejection')
  t.equal(server.fastify.a2a.handler.runningExecutions, 0, 'no execution left running')
})
