// The WebSocket constructor the transport takes from the runtime: Node's own (undici's,
// global from Node 22, behind --experimental-websocket on Node 20, run here in a child
// process) gets the service parameters as upgrade headers; a refused upgrade, whose
// status the standard API does not expose, is a ConnectionError.
import t from 'tap'
import { withGlobalWebSocket } from './helpers/global-websocket.js'
import { startServer } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())

t.test("Node's global WebSocket: headers at the upgrade; a refused upgrade is a ConnectionError", async t => {
  const seen = await withGlobalWebSocket(`
    const { A2AClient, WebSocketTransport } = await import('./lib/client/index.ts')
    let constructed = 0
    const Native = globalThis.WebSocket
    globalThis.WebSocket = class extends Native { constructor (...args) { super(...args); constructed++ } }
    const client = new A2AClient(new WebSocketTransport({ url: process.env.AGENT_WS, serviceParams: { 'X-Runtime': 'undici' } }))
    const answer = await client.sendMessage({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'params' }] } })
    await client.close()
    const refused = await new WebSocketTransport({ url: process.env.AGENT_WS, serviceParams: { 'A2A-Version': '0.3' } }).connect().catch(error => error)
    console.log(JSON.stringify({
      constructed,
      params: answer.task.artifacts[0].parts[0].data,
      refused: { name: refused.name, closeCode: refused.closeCode, retryable: refused.retryable, message: refused.message }
    }))
  `, { AGENT_WS: server.origin.replace('http', 'ws') })
  t.equal(seen.constructed, 2)
  t.match(seen.params, { 'a2a-version': '1.0', 'x-runtime': 'undici', ':path': '/' })
  t.same(seen.refused, {
    name: 'ConnectionError',
    closeCode: 1006,
    retryable: true,
    message: `the WebSocket connection to ${server.origin.replace('http', 'ws')} closed (1006) before it opened: the server refused the upgrade or could not be reached`
  })
})
