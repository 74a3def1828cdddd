import { startServer } from './bench/harness/servers.js'
import { measureHttp } from './bench/load/http.js'
const s = await startServer(process.argv[4] ?? 'fastify-a2a')
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'b', role: 'ROLE_USER', parts: [{ text: 'hello' }] } } })
const path = process.argv[3] ?? '/'
const r = await measureHttp({ url: s.origin + path, body: path === '/' ? body : JSON.stringify(JSON.parse(body).params), headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, connections: 50, durationSec: Number(process.argv[2] ?? 8) })
console.log(r)
await s.stop()
