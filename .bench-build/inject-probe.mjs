// dev probe: CPU µs per call in-process (no sockets), ours vs bare fastify
import Fastify from 'fastify'
import { a2aWebSocket } from './lib/index.js'
import { conformanceAgent, conformanceCard } from './examples/agent.js'
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'b', role: 'ROLE_USER', parts: [{ text: 'hello' }] } } })
const headers = { 'content-type': 'application/json', 'a2a-version': '1.0' }
async function measure (fastify, label, n = Number(process.argv[2] ?? 20000)) {
  const run = async (count) => { for (let i = 0; i < count; i += 50) await Promise.all(Array.from({ length: 50 }, () => fastify.inject({ method: 'POST', url: '/', payload: body, headers }))) }
  await run(5000)
  const r = await fastify.inject({ method: 'POST', url: '/', payload: body, headers })
  if (!r.body.includes('COMPLETED') && !r.body.includes('ok')) throw new Error(r.body)
  const best = []
  for (let rep = 0; rep < 3; rep++) {
    const c0 = process.cpuUsage()
    await run(n)
    const c = process.cpuUsage(c0)
    best.push((c.user + c.system) / n)
  }
  console.log(label, best.map(x => x.toFixed(1)).join(' '), 'µs/call (min', Math.min(...best).toFixed(1) + ')')
}
const ours = Fastify()
await ours.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
await ours.ready()
await measure(ours, 'ours')
const bare = Fastify()
bare.post('/', async () => ({ jsonrpc: '2.0', id: 1, result: { ok: true } }))
await bare.ready()
await measure(bare, 'bare')
