// Seed 000 §1 and §7: the upgrade, its refusals (HTTP status + the REST error body), the
// Origin check, the connection cap, and the card's advertisement of the binding.
import Fastify from 'fastify'
import fastifyWebsocket from '@fastify/websocket'
import t, { type Test } from 'tap'
import { WEBSOCKET_BINDING_URI, a2aWebSocket } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { normalizeOptions } from '../lib/options.js'
import { logLines } from './helpers/logs.js'
import { startServer, userMessage } from './helpers/server.js'
import { clientOf, connect, frameReader, rawUpgrade, refusedUpgrade, wsUrl } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

/**
 * Sends a WebSocket upgrade request to `path` and reads until the server closes the
 * connection: everything it wrote. Rejects if the server still holds it open after 5 s.
 */
async function upgradeUntilClosed (origin: string, path: string, headerLines = ['A2A-Version: 1.0']): Promise<string> {
  const { socket, response, rest } = await rawUpgrade(origin, headerLines, path)
  const chunks: Buffer[] = [rest]
  const written = () => `${response}\r\n\r\n${Buffer.concat(chunks).toString('latin1')}`
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`the server kept the connection open after answering: ${written()}`))
    }, 5000)
    socket.on('data', chunk => chunks.push(chunk))
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(written())
    })
  })
}

t.test('101 Switching Protocols; no subprotocol selected when none is offered', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const { socket, response } = await rawUpgrade(server.origin, ['A2A-Version: 1.0'])
  t.match(response, /^HTTP\/1\.1 101 Switching Protocols\r\n/)
  t.notMatch(response.toLowerCase(), /sec-websocket-protocol/)
  socket.destroy()
  const offered = await rawUpgrade(server.origin, ['A2A-Version: 1.0', 'Sec-WebSocket-Protocol: unknown.v9'])
  t.notMatch(offered.response.toLowerCase(), /sec-websocket-protocol/, 'an unknown offered subprotocol is not selected')
  offered.socket.destroy()
})

t.test('the card lists the binding with a ws:// URL at the root path, after JSON-RPC', async t => {
  const server = await startServer({ prefix: '/agent' })
  t.teardown(() => server.close())
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  const entry = card.supportedInterfaces.find((i: any) => i.protocolBinding === WEBSOCKET_BINDING_URI)
  t.same(entry, { url: `${server.origin.replace('http', 'ws')}/agent`, protocolBinding: 'https://a2a-rust.com/bindings/websocket/v1', protocolVersion: '1.0' })
  t.equal(card.supportedInterfaces[0].protocolBinding, 'JSONRPC')
  const client = await connect(wsUrl(server.origin, '/agent'))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'GET upgrades where POST is JSON-RPC')
  client.close()
})

t.test('a missing A2A-Version → 400 FAILED_PRECONDITION with VERSION_NOT_SUPPORTED', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const missing = await refusedUpgrade(wsUrl(server.origin, '/', ''))
  t.equal(missing.status, 400)
  t.match(missing.headers['content-type'], /^application\/a2a\+json/)
  t.same(missing.body, {
    error: {
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: 'A2A version 0.3 (no A2A-Version was sent) is not supported; supported versions: 1.0',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } }]
    }
  })
  const unsupported = await refusedUpgrade(wsUrl(server.origin, '/', '?A2A-Version=0.3'))
  t.equal(unsupported.body.error.details[0].metadata.requestedVersion, '0.3')
  const byHeader = await connect(wsUrl(server.origin, '/', ''), { headers: { 'A2A-Version': '1.0' } })
  byHeader.close()
})

t.test('the A2A-Version header wins over the query parameter, both ways', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const refused = await refusedUpgrade(wsUrl(server.origin, '/', '?A2A-Version=1.0'), { headers: { 'A2A-Version': '2.0' } })
  t.same({ status: refused.status, body: refused.body }, {
    status: 400,
    body: {
      error: {
        code: 400,
        status: 'FAILED_PRECONDITION',
        message: 'A2A version 2.0 is not supported; supported versions: 1.0',
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { requestedVersion: '2.0', supportedVersions: '1.0' } }]
      }
    }
  }, 'header 2.0 over query 1.0: refused for 2.0')
  const served = await connect(wsUrl(server.origin, '/', '?A2A-Version=0.3'), { headers: { 'A2A-Version': '1.0' } })
  t.equal((await served.request('GetTask', { id: 'x' })).error.code, -32001, 'header 1.0 over query 0.3: opens and serves')
  served.close()
})

t.test('by default an upgrade from any Origin is accepted', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const foreign = await connect(wsUrl(server.origin), { headers: { Origin: 'https://elsewhere.example' } })
  t.equal((await foreign.request('GetTask', { id: 'x' })).error.code, -32001, 'the connection serves')
  foreign.close()
})

t.test('allowMissingVersion accepts an upgrade without a version as 1.0', async t => {
  const server = await startServer({ allowMissingVersion: true })
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin, '/', ''))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001)
  client.close()
})

t.test('allowedOrigins: compared whole ignoring case; others 403 PERMISSION_DENIED without details', async t => {
  const server = await startServer({ websocket: { allowedOrigins: ['https://App.example.com'] } })
  t.teardown(() => server.close())
  const ok = await connect(wsUrl(server.origin), { headers: { Origin: 'https://app.EXAMPLE.com' } })
  ok.close()
  const refused = await refusedUpgrade(wsUrl(server.origin), { headers: { Origin: 'https://app.example.com.evil.test' } })
  t.equal(refused.status, 403)
  t.same(refused.body, { error: { code: 403, status: 'PERMISSION_DENIED', message: 'Origin https://app.example.com.evil.test is not allowed' } })
  const noOrigin = await connect(wsUrl(server.origin))
  noOrigin.close()
  t.pass('an upgrade without Origin is accepted unless requireOrigin is set')
})

t.test('allowedOrigins: an entry no browser sends as its Origin fails registration, naming it', async t => {
  const register = (allowedOrigins: string[]) => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket: { allowedOrigins } })
  for (const entry of ['*', 'https://app.example.com/', 'https://app.example.com:443', 'https://*.example.com', 'app.example.com', 'https://user@app.example.com', 'https://bücher.example', 'file:///tmp']) {
    t.throws(() => register(['https://ok.example', entry]), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket.allowedOrigins[1]: must be an origin, scheme://host[:port], or null' }, entry)
  }
  const origins = ['https://App.example.com', 'http://127.0.0.1:8080', 'http://[::1]:3000', 'https://xn--bcher-kva.example', 'chrome-extension://abcdefghijklmnop', 'null']
  t.same(register(origins).websocket.allowedOrigins, origins, 'serialized origins are accepted as given')
})

t.test('requireOrigin refuses an upgrade without Origin', async t => {
  const server = await startServer({ websocket: { allowedOrigins: ['https://app.example.com'], requireOrigin: true } })
  t.teardown(() => server.close())
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.same(refused.body, { error: { code: 403, status: 'PERMISSION_DENIED', message: 'Origin (none) is not allowed' } })
  const ok = await connect(wsUrl(server.origin), { headers: { Origin: 'https://app.example.com' } })
  ok.close()
})

t.test('maxConnections: an upgrade past it → 503 UNAVAILABLE; a freed slot is reused', async t => {
  const server = await startServer({ websocket: { maxConnections: 2 } })
  t.teardown(() => server.close())
  const one = await connect(wsUrl(server.origin))
  const two = await connect(wsUrl(server.origin))
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.equal(refused.status, 503)
  t.same(refused.body, { error: { code: 503, status: 'UNAVAILABLE', message: 'Service unavailable: 2 WebSocket connections are open' } })
  one.close()
  await one.closed
  await new Promise(resolve => setTimeout(resolve, 50))
  const three = await connect(wsUrl(server.origin))
  t.equal((await three.request('GetTask', { id: 'x' })).error.code, -32001)
  two.close()
  three.close()
})

t.test('a handshake `ws` would refuse → 400 FAILED_PRECONDITION with UNSUPPORTED_OPERATION, no slot kept', async t => {
  const server = await startServer({ websocket: { maxConnections: 1 } })
  t.teardown(() => server.close())
  const refusals: Array<[string, string]> = [
    ['Upgrade: h2c', 'Invalid Upgrade header'],
    ['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=', 'Missing or invalid Sec-WebSocket-Key header'],
    ['Sec-WebSocket-Key:', 'Missing or invalid Sec-WebSocket-Key header'],
    ['Sec-WebSocket-Version: 12', 'Missing or invalid Sec-WebSocket-Version header'],
    ['Sec-WebSocket-Protocol: a2a.v1, a2a.v1', 'Invalid Sec-WebSocket-Protocol header'],
    ['Sec-WebSocket-Protocol: a2a.v1,,x', 'Invalid Sec-WebSocket-Protocol header'],
    ['Sec-WebSocket-Protocol: a2a v1', 'Invalid Sec-WebSocket-Protocol header'],
    ['Sec-WebSocket-Protocol: a2a/v1', 'Invalid Sec-WebSocket-Protocol header']
  ]
  for (const [line, message] of refusals) {
    const written = await upgradeUntilClosed(server.origin, '/', ['A2A-Version: 1.0', line])
    const [head, body] = written.split('\r\n\r\n') as [string, string]
    const headers = new Map(head.split('\r\n').slice(1).map(field => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 2)]))
    t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/, line)
    t.equal(headers.get('content-type'), 'application/a2a+json; charset=utf-8', line)
    // RFC 6455 §4.4: a refused version comes with the versions the server speaks.
    t.equal(headers.get('sec-websocket-version'), line.startsWith('Sec-WebSocket-Version') ? '13, 8' : undefined, line)
    t.same(JSON.parse(body), {
      error: {
        code: 400,
        status: 'FAILED_PRECONDITION',
        message: `Unsupported operation: ${message}`,
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org' }]
      }
    }, line)
  }
  const version8 = await rawUpgrade(server.origin, ['A2A-Version: 1.0', 'Sec-WebSocket-Version: 8', 'Sec-WebSocket-Protocol: x.v9 ,\ta2a.v2'])
  t.match(version8.response, /^HTTP\/1\.1 101 /, 'version 8 and a list with whitespace around its commas pass, as ws accepts them')
  version8.socket.destroy()
  await new Promise(resolve => version8.socket.once('close', resolve))
  await new Promise(resolve => setTimeout(resolve, 50))
  const client = await connect(wsUrl(server.origin))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'the one slot is free after the refusals')
  client.close()
})

t.test('an HTTP request to the upgrade path without Upgrade is not a WebSocket', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  t.equal((await fetch(`${server.origin}/?A2A-Version=1.0`)).status, 404)
})

t.test('an upgrade request to another path gets that path\'s HTTP answer, then the server closes the connection', async t => {
  const fastify = Fastify()
  fastify.get('/before', async () => ({ route: 'before' }))
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix: '/agent' })
  fastify.get('/after', async () => ({ route: 'after' }))
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const origin = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`

  const card = await upgradeUntilClosed(origin, '/.well-known/agent-card.json')
  t.match(card, /^HTTP\/1\.1 200 OK\r\n/)
  t.match(card, /"protocolBinding":"JSONRPC"/, 'the card itself')
  t.match(await upgradeUntilClosed(origin, '/nowhere'), /^HTTP\/1\.1 404 Not Found\r\n/)
  t.match(await upgradeUntilClosed(origin, '/agent/tasks/x'), /^HTTP\/1\.1 404 Not Found\r\n[^]*"reason":"TASK_NOT_FOUND"/, 'a REST route answers as it does over HTTP')
  for (const route of ['before', 'after']) {
    const answer = await upgradeUntilClosed(origin, `/${route}`)
    t.match(answer, /^HTTP\/1\.1 200 OK\r\n/)
    t.ok(answer.endsWith(`{"route":"${route}"}`), `the user's route registered ${route} the plugin answers`)
  }
  const client = await connect(wsUrl(origin, '/agent'))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'the WebSocket route still upgrades')
  client.close()
})

t.test('two agents in sibling contexts: each upgrade is routed once, to either agent or the application\'s route, with no warning', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'debug', stream } })
  fastify.get('/user', async () => ({ route: 'user' }))
  for (const name of ['x', 'y']) {
    await fastify.register(async (context) => {
      await context.register(a2aWebSocket, { executor: conformanceAgent, card: { ...conformanceCard, name } })
    }, { prefix: `/${name}` })
  }
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const origin = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`

  const user = await upgradeUntilClosed(origin, '/user')
  t.match(user, /^HTTP\/1\.1 200 OK\r\n/)
  t.ok(user.endsWith('{"route":"user"}'), 'the application\'s route answers over HTTP')
  for (const name of ['x', 'y']) {
    const client = await connect(wsUrl(origin, `/${name}/`))
    const reply = await client.request('SendMessage', { message: userMessage('params') })
    t.equal(reply.result.task.artifacts[0].parts[0].data[':path'], `/${name}/`, `agent ${name} serves its WebSocket route`)
    client.close()
  }
  t.same(lines.map(line => JSON.parse(line)).filter(line => line.level >= 40).map(line => line.msg), [], 'no warning')
})

t.test('@fastify/websocket stays on the WebSocket route: no hook of it on any other route', async t => {
  const fastify = Fastify()
  fastify.get('/before', async () => 'before')
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix: '/agent' })
  fastify.get('/after', async () => 'after')
  await fastify.ready()
  t.teardown(() => fastify.close())
  const routes = fastify.printRoutes({ includeHooks: true, commonPrefix: false })
  /** The hook lines printed under a route's line (`path (METHODS)`), up to the next route. */
  const hooksOf = (route: string) => {
    const lines = routes.split('\n')
    const at = lines.findIndex(line => line.endsWith(route))
    t.not(at, -1, route)
    const hooks: string[] = []
    for (let i = at + 1; i < lines.length && (lines[i] as string).includes('•'); i++) hooks.push((lines[i] as string).replace(/^[\s│]*• /, ''))
    return hooks
  }
  t.same(hooksOf('/before (GET)'), [], 'a route registered before the plugin')
  t.same(hooksOf('/after (GET)'), [], 'a route registered after it')
  t.same(hooksOf('/agent (POST)'), ['(onSend) ["anonymous()"]'], 'JSON-RPC: its reply coalescing alone')
  t.same(hooksOf('/agent (GET)'), ['(onRequest) ["anonymous()","checkUpgrade()"]', '(onResponse) ["anonymous()"]'], 'the WebSocket route: @fastify/websocket\'s and the handshake checks')
  // As when @fastify/websocket is registered on the instance; a second registration of it then fails.
  t.ok(fastify.hasDecorator('websocketServer'), 'the instance has @fastify/websocket\'s server')
  t.equal(fastify.websocketServer.clients.size, 0)
  const injected = clientOf(await fastify.injectWS('/agent?A2A-Version=1.0', { headers: { 'x-tenant-hint': 'a' } }))
  const notFound = await injected.request('GetTask', { id: 'x' })
  const params = await injected.request('SendMessage', { message: { messageId: 'm-params', role: 'ROLE_USER', parts: [{ text: 'params' }] } })
  t.equal(notFound.error.code, -32001, 'fastify.injectWS reaches the WebSocket route')
  t.match(params.result.task.artifacts[0].parts[0].data, { 'x-tenant-hint': 'a', 'a2a-version': '1.0', ':path': '/agent' }, 'the injected upgrade\'s headers are the service parameters')
  t.equal(fastify.websocketServer.clients.size, 1)
  injected.socket.terminate()
})

t.test('@fastify/websocket registered by the user before the plugin serves the WebSocket route', async t => {
  const fastify = Fastify()
  // As the README says: a preClose that leaves the connections to the plugin's shutdown.
  await fastify.register(fastifyWebsocket, { preClose: (done) => done() })
  const ownServer = fastify.websocketServer
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  const origin = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
  let connections = 0
  ownServer.on('connection', () => { connections++ })
  const client = await connect(wsUrl(origin))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001)
  t.equal(connections, 1, 'through the user\'s WebSocket server')
  t.match(await upgradeUntilClosed(origin, '/nowhere'), /^HTTP\/1\.1 404 Not Found\r\n/, 'its own hooks close an upgrade answered over HTTP')
  await fastify.close()
  t.equal((await client.closed).code, 1001, 'the plugin\'s shutdown still closes its connections with 1001')
})

/**
 * An instance with @fastify/websocket registered by the user (with `wsOptions`), the plugin
 * at /agent, and a WebSocket route of the user's at /other, which answers each message with its length.
 */
async function userWebSocketPlugin (t: Test, wsOptions: fastifyWebsocket.WebsocketPluginOptions['options'] = {}): Promise<string> {
  const fastify = Fastify()
  await fastify.register(fastifyWebsocket, { options: wsOptions, preClose: (done) => done() })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, prefix: '/agent' })
  fastify.get('/other', { websocket: true }, (socket) => { socket.on('message', (data: Buffer) => socket.send(String(data.length))) })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  return `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
}

/** The subprotocol the 101 of an upgrade to `path` offering `offer` selects; undefined for none. */
async function selected (origin: string, path: string, offer: string): Promise<string | undefined> {
  const { socket, response } = await rawUpgrade(origin, ['A2A-Version: 1.0', `Sec-WebSocket-Protocol: ${offer}`], path)
  socket.destroy()
  if (!response.startsWith('HTTP/1.1 101 ')) throw new Error(`not upgraded: ${response}`)
  return /\r\nSec-WebSocket-Protocol: ([^\r]*)/i.exec(response)?.[1]
}

t.test('@fastify/websocket registered by the user: the plugin\'s route selects what it serves; the user\'s routes keep ws\'s default', async t => {
  const origin = await userWebSocketPlugin(t)
  t.equal(await selected(origin, '/agent', 'unknown.v9'), undefined, 'an unknown subprotocol is not selected')
  t.equal(await selected(origin, '/agent', 'x, a2a.v1'), 'a2a.v1')
  const v1 = await connectV1(v1Url(origin, '/agent'), {}, ['x', 'a2a.v1'])
  t.equal(v1.socket.protocol, 'a2a.v1')
  const frames = await v1.stream('s1', 'SendStreamingMessage', { message: userMessage('stream 1') })
  t.same(frames.at(-1), { jsonrpc: '2.0', id: 's1', streamEnd: true }, 'the connection speaks a2a.v1')
  v1.close()
  t.equal(await selected(origin, '/other', 'x, a2a.v1'), 'x', 'the first offered, as ws selects without a handleProtocols')
})

t.test('@fastify/websocket registered by the user with a handleProtocols: it answers the user\'s routes alone', async t => {
  const origin = await userWebSocketPlugin(t, { handleProtocols: (offered) => offered.has('chat') ? 'chat' : false })
  t.equal(await selected(origin, '/other', 'a2a.v1, chat'), 'chat')
  t.equal(await selected(origin, '/agent', 'chat'), undefined, 'the plugin\'s route: seed 000')
  t.equal(await selected(origin, '/agent', 'chat, a2a.v1'), 'a2a.v1')
})

t.test('@fastify/websocket registered by the user: a message over the plugin\'s limit is refused as its header arrives; the user\'s routes keep theirs', async t => {
  // The user's server keeps ws's default maxPayload, 100 MiB.
  const origin = await userWebSocketPlugin(t)
  const { socket, response, rest } = await rawUpgrade(origin, ['A2A-Version: 1.0'], '/agent')
  t.teardown(() => socket.destroy())
  t.match(response, /^HTTP\/1\.1 101 /)
  const reader = frameReader(socket, rest)
  // The header of a masked 64 MiB text frame (a zero mask), then its first KiB; the rest never comes.
  const header = Buffer.alloc(14)
  header[0] = 0x81
  header[1] = 0x80 | 127
  header.writeBigUInt64BE(BigInt(64 * 1024 * 1024), 2)
  socket.write(Buffer.concat([header, Buffer.alloc(1024, 'x')]))
  const close = await reader.next()
  t.same([close.opcode, close.payload.readUInt16BE(0), close.payload.length], [0x8, 1009, 2], 'closed with 1009 before the message is received')
  const other = await connect(wsUrl(origin, '/other'))
  other.send('x'.repeat(5 * 1024 * 1024))
  t.equal(await other.next(), 5 * 1024 * 1024, 'the user\'s route still takes a message past the plugin\'s 4 MiB')
  other.close()
})

t.test('fastify.injectWS holds a connection slot until its WebSocket closes', async t => {
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, websocket: { maxConnections: 1 } })
  await fastify.ready()
  t.teardown(() => fastify.close())
  const first = await fastify.injectWS('/?A2A-Version=1.0')
  await t.rejects(fastify.injectWS('/?A2A-Version=1.0'), { message: 'Unexpected server response: 503' }, 'the one slot is held')
  // The server's end of an injected connection closes when its stream does (terminate);
  // a close handshake through injectWS's in-memory streams never completes.
  const closed = new Promise(resolve => first.once('close', resolve))
  for (const socket of fastify.websocketServer.clients) socket.terminate()
  await closed
  t.equal(fastify.websocketServer.clients.size, 0)
  const second = await fastify.injectWS('/?A2A-Version=1.0')
  t.equal(fastify.websocketServer.clients.size, 1, 'the slot was freed when the first closed')
  second.terminate()
})
