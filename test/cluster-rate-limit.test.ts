// One rate-limit budget across instances (issue 11): with a Redis bus the conformance
// agent counts calls in Redis (@fastify/rate-limit's RedisStore), so a caller that spreads
// its calls over A and B spends one budget.
import t from 'tap'
import { startCluster } from './helpers/cluster.js'
import { post } from './helpers/server.js'

const MAX = 6
const getTask = (id: number) => ({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'x' } })

t.test('calls spread over A and B spend one budget; past it both refuse', async t => {
  const [a, b] = await startCluster(t, { env: { A2A_RATE_LIMIT: String(MAX) } })
  if (a === undefined || b === undefined) return
  for (let i = 0; i < MAX; i++) {
    const reply = await post((i % 2 === 0 ? a : b).origin, getTask(i))
    t.equal(reply.status, 200, `call ${i + 1} of ${MAX}, on ${i % 2 === 0 ? 'A' : 'B'}, is served`)
    t.equal(reply.body.error.code, -32001)
  }
  for (const [name, agent] of [['A', a], ['B', b]] as const) {
    const refused = await post(agent.origin, getTask(MAX))
    t.equal(refused.status, 429, `${name} refuses the next call: each had served only ${MAX / 2}`)
    t.equal(refused.body.error.code, -32603)
    t.equal(refused.body.error.message, `Rate limit exceeded: ${MAX} calls per 60000 ms`)
  }
})
