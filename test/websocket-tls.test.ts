// Seed 000 §7 Transport: on an HTTPS instance the binding is wss://, the card says so and
// is served over the same TLS.
import { readFileSync } from 'node:fs'
import { get } from 'node:https'
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
