// The conformance agent as `npm start` runs it (shared/sut-agent.md): one "listening"
// line, the card it serves, the params command, and a clean exit on SIGTERM / SIGINT.
import t from 'tap'
import { AgentExitedError, startAgentProcess } from './helpers/agent-process.js'
import { call, result, userMessage } from './helpers/server.js'

// Each test starts the agent as a child process and waits for its graceful exit: on a busy
// two-core machine that is more than the default 60 s per file.
t.setTimeout(240_000)

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

t.test('run by `npm start`\'s shell, SIGTERM and SIGINT reach the agent, which drains and exits 0', async t => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const agent = await startAgentProcess({}, { startScript: true })
    t.teardown(() => { agent.child.kill('SIGKILL') })
    t.equal((await result(agent.origin, 'SendMessage', { message: userMessage('hi') })).task.status.state, 'TASK_STATE_COMPLETED')
    agent.child.kill(signal)
    t.same(await agent.exit, { code: 0, signal: null }, `${signal}: the shell's process is the agent's`)
    await t.rejects(fetch(agent.origin), { name: 'TypeError' }, `${signal}: nothing serves the port after the exit`)
  }
})

t.test('an unsupported A2A_STORE fails at start: exit code 1, the reason on stderr', async t => {
  const failure = await startAgentProcess({ A2A_STORE: 'mongodb://nowhere' }).then(() => undefined, (error: unknown) => error)
  t.type(failure, AgentExitedError)
  const { code, signal, stdout, stderr } = failure as AgentExitedError
  t.same({ code, signal, stdout }, { code: 1, signal: null, stdout: '' })
  t.equal(stderr.split('\n').find(line => line.startsWith('Error: ')), 'Error: A2A_STORE=mongodb://nowhere: expected memory, sqlite:<path> or a postgres:// URL', 'the reason, on stderr')
})

t.test('a bad A2A_STORE or A2A_BUS URL fails at start with the reason on stderr, its password never', async t => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ A2A_STORE: 'postgres://app:hunter2@db:notaport/a2a' }, 'Error: A2A_STORE=postgres://app:***@db:notaport/a2a: not a valid URL'],
    [{ A2A_BUS: 'postgres://app:hunter2@db:notaport/a2a' }, 'Error: A2A_BUS=postgres://app:***@db:notaport/a2a: not a valid URL'],
    [{ A2A_BUS: 'redis+sentinel://app:hunter2@cache:26379' }, 'Error: A2A_BUS=redis+sentinel://app:***@cache:26379: expected a redis:// or postgres:// URL'],
    [{ A2A_STORE: 'mongodb://app:hunter2@nowhere' }, 'Error: A2A_STORE=mongodb://app:***@nowhere: expected memory, sqlite:<path> or a postgres:// URL']
  ]
  for (const [env, line] of cases) {
    const failure = await startAgentProcess(env).then(() => undefined, (error: unknown) => error)
    t.type(failure, AgentExitedError)
    const { code, signal, stdout, stderr } = failure as AgentExitedError
    t.same({ code, signal, stdout }, { code: 1, signal: null, stdout: '' })
    t.equal(stderr.split('\n').find(line => line.startsWith('Error: ')), line, 'the reason, on stderr')
    t.notMatch(stderr, 'hunter2', 'no password anywhere on stderr')
  }
})

t.test('the WebSocket knobs: allowed origins, required origin, connection cap', async t => {
  const { connect, refusedUpgrade, wsUrl } = await import('./helpers/ws.js')
  const agent = await startAgentProcess({ A2A_ALLOWED_ORIGINS: 'https://a.example, https://b.example', A2A_REQUIRE_ORIGIN: '1', A2A_MAX_CONNECTIONS: '1' })
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const card = await (await fetch(`${agent.origin}/.well-known/agent-card.json`)).json()
  t.same(card.supportedInterfaces.map((i: any) => i.protocolBinding), ['JSONRPC', 'HTTP+JSON', 'https://a2a-rust.com/bindings/websocket/v1', 'WEBSOCKET'])
  t.equal(card.supportedInterfaces[2].url, agent.origin.replace('http', 'ws'))
  t.equal((await refusedUpgrade(wsUrl(agent.origin))).status, 403, 'no Origin')
  t.equal((await refusedUpgrade(wsUrl(agent.origin), { headers: { Origin: 'https://c.example' } })).status, 403)
  const client = await connect(wsUrl(agent.origin), { headers: { Origin: 'https://B.example' } })
  t.equal((await refusedUpgrade(wsUrl(agent.origin), { headers: { Origin: 'https://a.example' } })).status, 503)
  t.equal((await client.request('SendMessage', { message: userMessage('hi') })).result.task.status.state, 'TASK_STATE_COMPLETED')
  client.close()
})

t.test('A2A_IDLE_TIMEOUT_MS closes a silent WebSocket with 1001', async t => {
  const { connect, rawUpgrade, frameReader, wsUrl } = await import('./helpers/ws.js')
  const agent = await startAgentProcess({ A2A_IDLE_TIMEOUT_MS: '200' })
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const { socket, rest } = await rawUpgrade(agent.origin, [], '/?A2A-Version=1.0')
  const reader = frameReader(socket, rest)
  t.equal((await reader.next()).opcode, 0x9)
  const close = await reader.next()
  t.equal(close.payload.readUInt16BE(0), 1001)
  socket.destroy()
  // A standard client answers the pings by itself; sending nothing, it is idle all the same.
  const client = await connect(wsUrl(agent.origin))
  t.same(await client.closed, { code: 1001, reason: 'idle timeout' })
})

t.test('A2A_AUTH_TOKEN: every call on every binding needs the bearer token; the card declares it; the extended card adds "secret"', async t => {
  const { connect, wsUrl } = await import('./helpers/ws.js')
  const agent = await startAgentProcess({ A2A_AUTH_TOKEN: 'sut-token' })
  t.teardown(() => { agent.child.kill('SIGKILL') })
  const card = await (await fetch(`${agent.origin}/.well-known/agent-card.json`)).json()
  t.same(card.securitySchemes, { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } })
  t.same(card.securityRequirements, [{ schemes: { bearer: { list: [] } } }])
  const refused = await fetch(agent.origin, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' }) })
  t.equal(refused.status, 401)
  t.equal((await fetch(`${agent.origin}/tasks`, { headers: { 'a2a-version': '1.0' } })).status, 401)
  const auth = { 'a2a-version': '1.0', authorization: 'Bearer sut-token' }
  const extended = await call(agent.origin, 'GetExtendedAgentCard', {}, auth)
  t.same(extended.result.skills.map((skill: any) => skill.id), ['conformance', 'secret'])
  const ws = await connect(wsUrl(agent.origin))
  t.equal((await ws.request('GetTask', { id: 'x' })).error.data[0].reason, 'UNAUTHENTICATED')
  ws.close()
  const wsOk = await connect(wsUrl(agent.origin), { headers: { authorization: 'Bearer sut-token' } })
  t.equal((await wsOk.request('SendMessage', { message: userMessage('hi') })).result.task.status.state, 'TASK_STATE_COMPLETED')
  wsOk.close()
})

t.test('A2A_RATE_LIMIT: calls per caller per minute on every binding', async t => {
  const { connect, wsUrl } = await import('./helpers/ws.js')
  const agent = await startAgentProcess({ A2A_RATE_LIMIT: '3' })
  t.teardown(() => { agent.child.kill('SIGKILL') })
  t.equal((await call(agent.origin, 'GetTask', { id: 'x' })).error.code, -32001)
  t.equal((await fetch(`${agent.origin}/tasks/x`, { headers: { 'a2a-version': '1.0' } })).status, 404)
  const ws = await connect(wsUrl(agent.origin))
  t.equal((await ws.request('GetTask', { id: 'x' })).error.code, -32001)
  t.equal((await ws.request('GetTask', { id: 'x' })).error.message, 'Rate limit exceeded: 3 calls per 60000 ms')
  ws.close()
  const limited = await fetch(agent.origin, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }) })
  t.equal(limited.status, 429)
  t.match(limited.headers.get('retry-after'), /^\d+$/)
})
