// Seed 000 §7 Transport: on an HTTPS instance the binding is wss://, the card says so and
// is served over the same TLS, and the handshake timeout bounds the TLS handshake.
import { readFileSync } from 'node:fs'
import { get } from 'node:https'
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import Fastify from 'fastify'
import t from 'tap'
import { a2aWebSocket, WEBSOCKET_BINDING_URI } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { connect } from './helpers/ws.js'

const cert = readFileSync(new URL('./fixtures/localhost-cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/localhost-key.pem', import.meta.url))

t.test('wss:// in the card, and a working wss connection', async t => {
  const fastify = Fastify({ https: { cert, key } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as { port: number }
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

t.test('publicUrl https → wss', async t => {
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, publicUrl: 'https://agent.example.com/base' })
  const card = (await fastify.inject('/.well-known/agent-card.json')).json()
  t.equal(card.supportedInterfaces.find((i: any) => i.protocolBinding === WEBSOCKET_BINDING_URI).url, 'wss://agent.example.com/base')
})

/** Whether the server closes `socket` within `ms`. */
function closedWithin (socket: Socket, ms: number): Promise<boolean> {
  return new Promise(resolve => {
    const timer = setTimeout(() => resolve(false), ms)
    socket.once('close', () => { clearTimeout(timer); resolve(true) })
  })
}

t.test('handshakeTimeout bounds the TLS handshake, then the upgrade; a prompt wss connection stays', async t => {
  const fastify = Fastify({ https: { cert, key } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, websocket: { handshakeTimeout: 200 } })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as { port: number }

  const silent = netConnect(port, '127.0.0.1')
  t.teardown(() => silent.destroy())
  t.ok(await closedWithin(silent, 2000), 'a peer that sends no ClientHello is disconnected')

  const stalled = tlsConnect({ port, host: '127.0.0.1', servername: 'localhost', ca: cert })
  t.teardown(() => stalled.destroy())
  await new Promise(resolve => stalled.once('secureConnect', resolve))
  stalled.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n')
  t.ok(await closedWithin(stalled, 2000), 'a peer that completes TLS and not its upgrade is disconnected')

  const client = await connect(`wss://localhost:${port}/?A2A-Version=1.0`, { ca: cert })
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal((await client.request('SendMessage', { message: { messageId: 'late', role: 'ROLE_USER', parts: [{ text: 'still here' }] } })).result.task.artifacts[0].parts[0].text, 'still here', 'past the timeout')
  client.close()
})
