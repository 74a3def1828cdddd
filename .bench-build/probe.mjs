import { startServer } from './bench/harness/servers.js'
import { openSocket, sequentialLatencies, measurePipeline } from './bench/load/ws.js'
const s = await startServer('fastify-a2a')
const url = s.origin.replace('http', 'ws') + '/?A2A-Version=1.0'
const params = JSON.stringify({ message: { messageId: 'b', role: 'ROLE_USER', parts: [{ text: 'hello' }] } })
const frame = (id) => `{"jsonrpc":"2.0","id":${id},"method":"SendMessage","params":${params}}`
const sock = await openSocket(url)
const lat = await sequentialLatencies(sock, frame, () => {}, 300)
lat.sort((a, b) => a - b)
console.log('sequential p50', lat[150].toFixed(2), 'p99', lat[297].toFixed(2))
sock.close()
for (const inFlight of [1, 4, 16, 64]) {
  const r = await measurePipeline({ url, frame, check: () => {}, inFlight, durationMs: 1500, maxCalls: 1e6 })
  console.log('inFlight', inFlight, r.roundTripsPerSec.toFixed(0))
}
await s.stop()
