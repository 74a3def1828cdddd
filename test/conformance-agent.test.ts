// The conformance agent as `npm start` runs it (shared/sut-agent.md): one "listening"
// line, the card it serves, the params command, and a clean exit on SIGTERM / SIGINT.
import t from 'tap'
import { startAgentProcess } from './helpers/agent-process.js'
import { call, result, userMessage } from './helpers/server.js'

t.test('prints exactly one listening line, serves the card, exits 0 on SIGTERM', async t => {
  const agent = await startAgentProcess()
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const card = await (await fetch(`${agent.origin}/.well-known/agent-card.json`)).json()
  t.same(card.capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: true })
  t.same(card.defaultInputModes, ['text/plain', 'application/json'])
  t.same(card.defaultOutputModes, ['text/plain', 'application/json'])
  t.same(card.supportedInterfaces[0], { url: agent.origin, protocolBinding: 'JSONRPC', protocolVersion: '1.0' })
  const echoed = await result(agent.origin, 'SendMessage', { message: userMessage('over the process boundary') })
  t.same(echoed.task.artifacts[0].parts, [{ text: 'over the process boundary' }])
  agent.child.kill('SIGTERM')
  t.same(await agent.exit, { code: 0, signal: null })
  t.equal(agent.stdout(), `listening on ${agent.origin}\n`)
})

t.test('params returns the service parameters the executor saw, reserved names included', async t => {
  const agent = await startAgentProcess()
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const answer = await call(agent.origin, 'SendMessage', { message: userMessage('params') }, { 'a2a-version': '1.0', 'X-Trace': 'abc' })
  const artifact = answer.result.task.artifacts[0]
  t.equal(artifact.artifactId, 'params')
  t.match(artifact.parts[0].data, { 'a2a-version': '1.0', 'x-trace': 'abc', ':path': '/' })
  agent.child.kill('SIGINT')
  t.same(await agent.exit, { code: 0, signal: null })
})

t.test('an unsupported A2A_STORE fails at start', async t => {
  await t.rejects(startAgentProcess({ A2A_STORE: 'mongodb://nowhere' }), /exited/)
})

t.test('the WebSocket knobs: allowed origins, required origin, connection cap', async t => {
  const { connect, refusedUpgrade, wsUrl } = await import('./helpers/ws.js')
  const agent = await startAgentProcess({ A2A_ALLOWED_ORIGINS: 'https://a.example, https://b.example', A2A_REQUIRE_ORIGIN: '1', A2A_MAX_CONNECTIONS: '1' })
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const card = await (await fetch(`${agent.origin}/.well-known/agent-card.json`)).json()
  t.same(card.supportedInterfaces.map((i: any) => i.protocolBinding), ['JSONRPC', 'HTTP+JSON', 'https://a2a-rust.com/bindings/websocket/v1'])
  t.equal(card.supportedInterfaces[2].url, agent.origin.replace('http', 'ws'))
  t.equal((await refusedUpgrade(wsUrl(agent.origin))).status, 403, 'no Origin')
  t.equal((await refusedUpgrade(wsUrl(agent.origin), { headers: { Origin: 'https://c.example' } })).status, 403)
  const client = await connect(wsUrl(agent.origin), { headers: { Origin: 'https://B.example' } })
  t.equal((await refusedUpgrade(wsUrl(agent.origin), { headers: { Origin: 'https://a.example' } })).status, 503)
  t.equal((await client.request('SendMessage', { message: userMessage('hi') })).result.task.status.state, 'TASK_STATE_COMPLETED')
  client.close()
})

t.test('A2A_IDLE_TIMEOUT_MS closes a silent WebSocket with 1001', async t => {
  const { rawUpgrade, frameReader } = await import('./helpers/ws.js')
  const agent = await startAgentProcess({ A2A_IDLE_TIMEOUT_MS: '200' })
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const { socket, rest } = await rawUpgrade(agent.origin, [], '/?A2A-Version=1.0')
  const reader = frameReader(socket, rest)
  t.equal((await reader.next()).opcode, 0x9)
  const close = await reader.next()
  t.equal(close.payload.readUInt16BE(0), 1001)
  socket.destroy()
})
