// Seed 000 §7 limits, each an option: the 4 MiB message cap, the handshake timeout, the
// connection cap, idle connections, and a graceful close.
import { readFileSync } from 'node:fs'
import { connect as http2Connect } from 'node:http2'
import { connect as netConnect } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { PermissionDeniedError, a2aWebSocket, type AgentExecutor } from '../lib/index.js'
import { normalizeOptions, type WebSocketOptions } from '../lib/options.js'
import { eventually, parseSse, startServer, userMessage } from './helpers/server.js'
import { timeoutsMadeIn } from './helpers/timers.js'
import { clientFrame, connect, frameReader, openOrRefused, pingedThenClosedIdle, rawUpgrade, refusedUpgrade, watchFrames, wsUrl, type WsClient } from './helpers/ws.js'

t.test('a message over the cap ends the connection with 1009; a new connection works', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  client.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x'.repeat(4 * 1024 * 1024)) } }))
  t.equal((await client.closed).code, 1009)
  const again = await connect(wsUrl(server.origin))
  t.equal((await again.request('GetTask', { id: 'x' })).error.code, -32001)
  again.close()
})

t.test('a message of exactly 4 MiB is served; one byte more ends the connection with 1009', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const cap = 4 * 1024 * 1024
  const frameOf = (id: string, bytes: number) => {
    const empty = JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'x', padding: '' } })
    return JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'x', padding: 'x'.repeat(bytes - empty.length) } })
  }
  const client = await connect(wsUrl(server.origin))
  const exact = frameOf('exact', cap)
  t.equal(Buffer.byteLength(exact), cap)
  client.send(exact)
  t.same(await client.next(), {
    jsonrpc: '2.0',
    id: 'exact',
    error: { code: -32001, message: 'Task not found: x', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'x' } }] }
  }, 'the 4,194,304-byte frame is answered')
  client.send(frameOf('over', cap + 1))
  t.equal((await client.closed).code, 1009)
})

t.test('the cap is an option; a message just under it is served', async t => {
  const server = await startServer({ websocket: { maxMessageSize: 2048 } })
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  const fits = JSON.stringify({ jsonrpc: '2.0', id: 'fits', method: 'GetTask', params: { id: 'x', padding: 'x'.repeat(1900) } })
  t.equal((await client.request('GetTask', { id: 'x', padding: 'x'.repeat(1900) }, 'fits')).error.code, -32001, `${fits.length} bytes fit`)
  client.send({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'x', padding: 'x'.repeat(3000) } })
  t.equal((await client.closed).code, 1009)
})

t.test('a peer that opens TCP and never completes the upgrade is disconnected', async t => {
  const server = await startServer({ websocket: { handshakeTimeout: 200 } })
  t.teardown(() => server.close())
  // The handshake timeouts: one per TCP connection, cleared once its request or upgrade arrives.
  const handshakeTimers = timeoutsMadeIn(t, 'lib/dispatcher/websocket.ts')
  const { port } = new URL(server.origin)
  const socket = netConnect(Number(port), '127.0.0.1')
  let answered = 0
  socket.on('data', chunk => { answered += chunk.length })
  socket.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n')
  await new Promise(resolve => socket.on('close', resolve))
  t.same({ answered, handshakeTimers }, { answered: 0, handshakeTimers: [{ delay: 200, fired: true, ended: true }] },
    'dropped without a byte by its handshake timeout, which ran out')
  const ok = await connect(wsUrl(server.origin))
  t.equal((await ok.request('GetTask', { id: 'x' })).error.code, -32001, 'a prompt upgrade is unaffected')
  ok.close()
})

// Over HTTP/2 a request's `socket` is a Proxy of the session's socket, not the socket the
// connection's timer was set for: the timer must end at the first request all the same.
const tls = { cert: readFileSync(new URL('./fixtures/localhost-cert.pem', import.meta.url)), key: readFileSync(new URL('./fixtures/localhost-key.pem', import.meta.url)) }
for (const [name, serverOptions, scheme] of [['h2c', { http2: true }, 'http'], ['h2 over TLS', { http2: true, https: tls }, 'https']] as const) {
  t.test(`${name}: the handshake timeout ends at the session's first request, and a stream outlives it`, async t => {
    // The task ends once the test has seen the connection's timer end: cleared by the request
    // (or, run out, having closed the session).
    let release = () => {}
    const released = new Promise<void>(resolve => { release = resolve })
    const executor: AgentExecutor = {
      async execute (_context, events) {
        await events.working()
        await released
        await events.artifact({ artifactId: 'late', parts: [{ text: 'after the timer' }] })
        await events.completed()
      }
    }
    const fastify = Fastify({ ...serverOptions })
    await fastify.register(a2aWebSocket, { executor, card: conformanceCard, websocket: { handshakeTimeout: 500 } })
    await fastify.listen({ host: '127.0.0.1', port: 0 })
    t.teardown(() => fastify.close())
    const { port } = fastify.server.address() as { port: number }
    const handshakeTimers = timeoutsMadeIn(t, 'lib/dispatcher/websocket.ts')

    const session = http2Connect(`${scheme}://localhost:${port}`, { ca: tls.cert })
    t.teardown(() => session.destroy())
    session.on('error', () => {})
    const request = session.request({ ':method': 'POST', ':path': '/message:stream', 'content-type': 'application/json', 'a2a-version': '1.0' })
    request.on('error', () => {})
    let body = ''
    request.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
    const ended = new Promise(resolve => request.on('close', resolve))
    request.end(JSON.stringify({ message: userMessage('h2') }))

    await eventually(() => handshakeTimers[0]?.ended === true)
    release()
    await ended
    t.same(handshakeTimers, [{ delay: 500, fired: false, ended: true }], 'the timer was cleared by the request, not run out')
    const events = parseSse(body).map(({ data }) => data.task?.status.state ?? data.statusUpdate?.status.state ?? data.artifactUpdate?.artifact.parts[0].text)
    t.same(events, ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'after the timer', 'TASK_STATE_COMPLETED'], 'the stream ends with its terminal event')
  })
}

t.test('a timeout setTimeout cannot hold (over 2**31 - 1 ms, which would fire at once) fails registration', async t => {
  const options = (websocket: WebSocketOptions) => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, websocket })
  t.throws(() => options({ handshakeTimeout: 2 ** 31 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket.handshakeTimeout: must be at most 2147483647 ms' })
  t.throws(() => options({ idleTimeout: 2 ** 32 + 2 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket.idleTimeout: must be at most 2147483647 ms' })
  t.throws(() => options({ closeGrace: 2 ** 31 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket.closeGrace: must be at most 2147483647 ms' })
  t.throws(() => options(null as never), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket: must be an object' })
  t.throws(() => options(64 as never), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket: must be an object' })
  t.throws(() => options({ a2aV1: null as never }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option websocket.a2aV1: must be an object' })
  t.match(options({ handshakeTimeout: 2 ** 31 - 1, idleTimeout: 2 ** 31 - 1 }).websocket, { handshakeTimeout: 2 ** 31 - 1, idleTimeout: 2 ** 31 - 1 }, 'the longest is accepted')
})

t.test('maxConnections holds for upgrades that arrive together; a closed, refused or abandoned upgrade frees its slot', async t => {
  // Each upgrade waits in onUpgrade, as a check that does I/O would.
  const server = await startServer({
    websocket: { maxConnections: 1 },
    interceptors: [{
      async onUpgrade (request) {
        await new Promise(resolve => setTimeout(resolve, 100))
        if (request.headers['x-refuse'] !== undefined) throw new PermissionDeniedError()
      }
    }]
  })
  t.teardown(() => server.close())
  const url = wsUrl(server.origin)
  const capped = { status: 503, body: { error: { code: 503, status: 'UNAVAILABLE', message: 'Service unavailable: 1 WebSocket connections are open' } } }

  const together = await Promise.all([openOrRefused(url), openOrRefused(url)])
  const opened = together.flatMap(outcome => 'client' in outcome ? [outcome.client] : [])
  t.equal(opened.length, 1, 'exactly one of the two opens')
  t.same(together.flatMap(outcome => 'refused' in outcome ? [outcome.refused] : []), [capped], 'the other gets the cap\'s refusal')
  const first = opened[0] as WsClient
  t.equal((await first.request('GetTask', { id: 'x' })).error.code, -32001)
  first.close()
  await first.closed
  await new Promise(resolve => setTimeout(resolve, 50))

  const refused = await refusedUpgrade(url, { headers: { 'x-refuse': 'yes' } })
  t.same({ status: refused.status, body: refused.body }, {
    status: 403,
    body: { error: { code: 403, status: 'PERMISSION_DENIED', message: 'permission denied', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PERMISSION_DENIED', domain: 'a2a-rust.com' }] } }
  }, 'refused by onUpgrade')
  // A peer that leaves (RST, so the server's socket closes at once) while its upgrade is checked.
  const abandoned = netConnect(Number(new URL(server.origin).port), '127.0.0.1')
  abandoned.write('GET /?A2A-Version=1.0 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
  await new Promise(resolve => setTimeout(resolve, 30))
  abandoned.resetAndDestroy()
  await new Promise(resolve => setTimeout(resolve, 150))

  const second = await connect(url)
  t.equal((await second.request('GetTask', { id: 'x' })).error.code, -32001, 'the slot was freed')
  t.same(await openOrRefused(url).then(outcome => 'refused' in outcome ? outcome.refused : 'opened'), capped, 'and counted once: the cap still holds')
  second.close()
})

t.test('idleTimeout: a connection with no message and no request in progress is closed with 1001, answering pings or not', async t => {
  const server = await startServer({ websocket: { idleTimeout: 300 } })
  t.teardown(() => server.close())
  const answering = await connect(wsUrl(server.origin))
  let pings = 0
  answering.socket.on('ping', () => { pings++ })
  const { socket, rest } = await rawUpgrade(server.origin, [], '/?A2A-Version=1.0')
  await pingedThenClosedIdle(t, frameReader(socket, rest))
  socket.destroy()
  t.same(await answering.closed, { code: 1001, reason: 'idle timeout' })
  t.ok(pings > 0, 'the ws client answered pings, which are no application messages')
})

t.test('idleTimeout: a request in progress keeps a peer that answers pings; one that stops answering is closed', async t => {
  // A ping every 500 ms, each pong awaited 500 ms: room for a loaded machine's stalls.
  const server = await startServer({ websocket: { idleTimeout: 1000 } })
  t.teardown(() => server.close())
  const holding = await connect(wsUrl(server.origin))
  holding.send({ jsonrpc: '2.0', id: 'held', method: 'SendStreamingMessage', params: { message: userMessage('hold') } })
  const { socket, rest } = await rawUpgrade(server.origin, [], '/?A2A-Version=1.0')
  const reader = frameReader(socket, rest)
  socket.write(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'held', method: 'SendStreamingMessage', params: { message: userMessage('hold') } })))
  t.equal((await reader.next(2000)).opcode, 0x1, 'the raw peer\'s stream began')
  const opcodes: number[] = []
  for (let frame = await reader.next(2000); ; frame = await reader.next(2000)) {
    if (frame.opcode !== 0x1) opcodes.push(frame.opcode)
    if (frame.opcode === 0x8) {
      t.same([frame.payload.readUInt16BE(0), frame.payload.subarray(2).toString()], [1001, 'idle timeout'])
      break
    }
  }
  t.same(opcodes, [0x9, 0x8], 'pinged, then closed when no pong came')
  socket.destroy()
  await new Promise(resolve => setTimeout(resolve, 500))
  t.equal(holding.socket.readyState, holding.socket.OPEN, 'a held stream, its pings answered, is no idleness')
  t.equal((await holding.request('GetTask', { id: 'x' })).error.code, -32001)
  holding.close()
})

t.test('fastify.close(): no new upgrades, calls in flight finish, then every connection gets 1001', async t => {
  const server = await startServer({ websocket: { closeGrace: 2000 } })
  const client = await connect(wsUrl(server.origin))
  const idle = await connect(wsUrl(server.origin))
  client.send({ jsonrpc: '2.0', id: 'in-flight', method: 'SendMessage', params: { message: userMessage('sleep 500') } })
  // Its execution runs before the close begins; a message read after it would be refused.
  await eventually(() => server.fastify.a2a.handler.runningExecutions === 1)
  const closing = server.close()
  await new Promise(resolve => setTimeout(resolve, 30))
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.same(refused, {
    status: 503,
    headers: refused.headers,
    body: {
      error: {
        code: 503,
        status: 'UNAVAILABLE',
        message: 'Service unavailable: the server is shutting down',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
      }
    }
  }, 'a new upgrade is refused')
  t.equal(refused.headers['retry-after'], '1', 'with the RetryInfo as Retry-After')
  const reply = await client.next()
  t.equal(reply.id, 'in-flight')
  t.equal(reply.result.task.status.state, 'TASK_STATE_COMPLETED', 'the call in flight finished')
  t.same(await client.closed, { code: 1001, reason: 'server shutting down' })
  t.same(await idle.closed, { code: 1001, reason: 'server shutting down' })
  await closing
})

t.test('the grace period bounds a call that does not finish', async t => {
  const server = await startServer({ websocket: { closeGrace: 100 } })
  const client = await connect(wsUrl(server.origin))
  const started = watchFrames(client, 'held')
  const held = client.stream('SendStreamingMessage', { message: userMessage('hold') }, 'held')
  await started.reached(2)
  const closing = server.close()
  t.same(await client.closed, { code: 1001, reason: 'server shutting down' })
  await closing
  t.same(server.fastify.a2a.lastShutdownReport, { drained: 0, cancelled: 1, abandoned: 0, streamsEnded: 0, webSocketsClosed: 1 },
    'the held task did not end by itself: it was cancelled at the grace period, then the connection closed')
  t.same((await held).map(frame => frame.error?.code ?? frame.result.statusUpdate?.status.state ?? Object.keys(frame.result)[0]), ['task', 'TASK_STATE_WORKING', 'TASK_STATE_CANCELED', 'status'],
    'its stream ended with the cancel, before the close')
})

t.test('frames that arrive in one TCP write with the upgrade are all served', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const { socket, rest } = await rawUpgrade(server.origin, [], '/?A2A-Version=1.0')
  const reader = frameReader(socket, rest)
  socket.write(Buffer.concat([1, 2, 3].map(id => clientFrame(JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: 'x' } })))))
  const ids = []
  for (let i = 0; i < 3; i++) ids.push(JSON.parse((await reader.next()).payload.toString()).id)
  t.same(ids.sort(), [1, 2, 3])
  socket.destroy()
})
