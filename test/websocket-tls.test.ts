// Seed 000 §7 Transport: on an HTTPS instance the binding is wss://, the card says so and
// is served over the same TLS, which offers ALPN http/1.1; the handshake timeout bounds the
// TLS handshake.
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { get } from 'node:https'
import { connect as netConnect } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { a2aWebSocket, WEBSOCKET_BINDING_URI } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { eventually } from './helpers/server.js'
import { timeoutsMadeIn } from './helpers/timers.js'
import { connect } from './helpers/ws.js'

const cert = readFileSync(new URL('./fixtures/localhost-cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/localhost-key.pem', import.meta.url))

/** The conformance agent over TLS on a port of its own, closed with the test. */
async function tlsAgent (t: Test): Promise<number> {
  const fastify = Fastify({ https: { cert, key } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  return (fastify.server.address() as { port: number }).port
}

t.test('wss:// in the card, and a working wss connection', async t => {
  const port = await tlsAgent(t)
  const card: any = await new Promise((resolve, reject) => {
    get(`https://localhost:${port}/.well-known/agent-card.json`, { ca: cert }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve(JSON.parse(body)))
    }).on('error', reject)
  })
  t.same(card.supportedInterfaces.find((i: any) => i.protocolBinding === WEBSOCKET_BINDING_URI), {
    url: `wss://localhost:${port}`, protocolBinding: WEBSOCKET_BINDING_URI, protocolVersion: '1.0'
  })
  t.ok(card.supportedInterfaces.every((i: any) => /^(https|wss):\/\//.test(i.url)))
  const client = await connect(`wss://localhost:${port}/?A2A-Version=1.0`, { ca: cert })
  t.equal((await client.request('SendMessage', { message: { messageId: 'tls', role: 'ROLE_USER', parts: [{ text: 'secure' }] } })).result.task.artifacts[0].parts[0].text, 'secure')
  client.close()
})

t.test('a client offering h2 and http/1.1 gets http/1.1 over ALPN, and upgrades on it', async t => {
  const port = await tlsAgent(t)
  const tlsSocket = tlsConnect({ port, host: '127.0.0.1', servername: 'localhost', ca: cert, ALPNProtocols: ['h2', 'http/1.1'] })
  t.teardown(() => tlsSocket.destroy())
  await once(tlsSocket, 'secureConnect')
  t.equal(tlsSocket.alpnProtocol, 'http/1.1')
  tlsSocket.write('GET /?A2A-Version=1.0 HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
  const [head] = await once(tlsSocket, 'data') as [Buffer]
  t.match(head.toString('latin1'), /^HTTP\/1\.1 101 Switching Protocols\r\n/)
})

t.test('publicUrl https → wss', async t => {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, publicUrl: 'https://agent.example.com/base' })
  const card = (await fastify.inject('/.well-known/agent-card.json')).json()
  t.equal(card.supportedInterfaces.find((i: any) => i.protocolBinding === WEBSOCKET_BINDING_URI).url, 'wss://agent.example.com/base')
})

t.test('handshakeTimeout bounds the TLS handshake, then the upgrade; a prompt wss connection stays', async t => {
  const fastify = Fastify({ https: { cert, key } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, websocket: { handshakeTimeout: 200 } })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as { port: number }
  // The handshake timeouts, one per TCP connection: what closed each peer, read without a clock.
  const handshakeTimers = timeoutsMadeIn(t, 'lib/dispatcher/websocket.ts')

  const silent = netConnect(port, '127.0.0.1')
  t.teardown(() => silent.destroy())
  await once(silent, 'close')
  t.same(handshakeTimers, [{ delay: 200, fired: true, ended: true }], 'a peer that sends no ClientHello is disconnected by its handshake timeout')

  const stalled = tlsConnect({ port, host: '127.0.0.1', servername: 'localhost', ca: cert })
  t.teardown(() => stalled.destroy())
  await once(stalled, 'secureConnect')
  stalled.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n')
  await once(stalled, 'close')
  t.same(handshakeTimers[1], { delay: 200, fired: true, ended: true }, 'a peer that completes TLS and not its upgrade is disconnected by its handshake timeout')

  const client = await connect(`wss://localhost:${port}/?A2A-Version=1.0`, { ca: cert })
  await eventually(() => handshakeTimers[2]?.ended === true)
  t.same(handshakeTimers.slice(2), [{ delay: 200, fired: false, ended: true }], 'the prompt connection\'s timeout was cleared at its upgrade: nothing will close it')
  t.equal((await client.request('SendMessage', { message: { messageId: 'late', role: 'ROLE_USER', parts: [{ text: 'still here' }] } })).result.task.artifacts[0].parts[0].text, 'still here', 'and it serves')
  client.close()
})
