import { startServer } from './bench/harness/servers.js'
import { measurePipeline } from './bench/load/ws.js'
const s = await startServer('fastify-a2a')
const url = s.origin.replace('http', 'ws') + '/?A2A-Version=1.0'
const params = JSON.stringify({ message: { messageId: 'b', role: 'ROLE_USER', parts: [{ text: 'hello' }] } })
const frame = (id) => `{"jsonrpc":"2.0","id":${id},"method":"SendMessage","params":${params}}`
const r = await measurePipeline({ url, frame, check: () => {}, inFlight: 64, durationMs: Number(process.argv[2] ?? 8000), maxCalls: 1e7 })
console.log(r)
await s.stop()
