// What is logged of a call's error: a failure (an internal error's or an out-of-reach
// service's cause) at error, once; a stream whose reader fell behind at warn; nothing for what
// the server means to answer (a refusal, shutdown's Unavailable). A key set or a verifier out
// of reach is a failure, not a refusal of the token; an upgrade that fails is logged as a call.
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { a2aWebSocket, type A2APluginOptions, type CallOutcome } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { MemoryTaskStore } from '../lib/store/memory.js'
import { openSse, post, result, userMessage, V1 } from './helpers/server.js'
import { rest } from './helpers/rest.js'
import { clientFrame, connect, frameReader, rawUpgrade, wsUrl } from './helpers/ws.js'
import { logLines } from './helpers/logs.js'

interface Entry { level: number, msg: string, reqId?: string, req?: { url: string }, err?: { message: string }, a2aRefusal?: unknown, droppedEvents?: string }

/** A server whose log the test reads; `entries(msg)` are the lines with that message. */
async function serve (t: Test, options: Partial<A2APluginOptions>) {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'info', stream } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, ...options })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const address = fastify.server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const entries = (msg: string): Entry[] => lines.map(line => JSON.parse(line) as Entry).filter(entry => entry.msg === msg)
  return { fastify, origin, entries }
}

const getTask = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }
const unavailable = (message: string) => ({
  code: -32603, message: `Service unavailable: ${message}`, data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
})

t.test('a key set at jwksUrl that cannot be read refuses no token: Unavailable, logged once as a failure', async t => {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setAudience('a2a').setSubject('carol').setExpirationTime('5m').sign(privateKey)
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }
  let answer: 'keys' | 'error' | 'not a key set' = 'error'
  const provider = Fastify()
  provider.get('/jwks.json', async (_request, reply) => answer === 'keys' ? { keys: [jwk] } : answer === 'error' ? reply.code(500).send('down') : { nothing: true })
  await provider.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => provider.close())
  const jwksUrl = `http://127.0.0.1:${(provider.server.address() as { port: number }).port}/jwks.json`
  const { origin, entries } = await serve(t, { auth: { jwt: { jwksUrl, audience: 'a2a' } } })
  const headers = { ...V1, authorization: `Bearer ${token}` }

  const rpc = await post(origin, getTask, headers)
  t.equal(rpc.status, 200)
  t.same(rpc.body.error, unavailable("the identity provider's key set cannot be read"), 'a 500 from the provider')
  answer = 'not a key set'
  const restAnswer = await rest(origin, 'GET', '/tasks/x', { headers })
  t.equal(restAnswer.status, 503, 'not a key set')
  t.equal(restAnswer.body.error.status, 'UNAVAILABLE')
  t.same(entries('A2A call refused by auth'), [], 'no refusal is logged')
  t.same(entries('A2A call failed').map(entry => entry.level), [50, 50], 'each failure logged once, at error')
  answer = 'keys'
  t.equal((await post(origin, getTask, headers)).body.error.code, -32001, 'once the key set is read the token is valid')
  const forged = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'other' }).setAudience('a2a').setSubject('carol').setExpirationTime('5m').sign(privateKey)
  const refused = await post(origin, getTask, { ...V1, authorization: `Bearer ${forged}` })
  t.equal(refused.status, 401, 'a token no key of the set verifies is still refused as invalid')
  t.equal(refused.headers.get('www-authenticate'), 'Bearer realm="a2a", error="invalid_token"')
  t.equal(entries('A2A call refused by auth').length, 1)
})

t.test('a verify that throws is a failure: logged as one, not as a refusal', async t => {
  const { origin, entries } = await serve(t, {
    auth: { bearer: { verify: async () => { throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' }) } } }
  })
  const answer = await post(origin, getTask, { ...V1, authorization: 'Bearer anything' })
  t.same(answer.body.error, unavailable('a service the agent needs cannot be reached'))
  t.same(entries('A2A call refused by auth'), [])
  t.same(entries('A2A call failed').map(entry => [entry.level, entry.err?.message]), [[50, 'connect ECONNREFUSED 10.0.0.1:5432']])
})

t.test('an upgrade whose check fails (not refuses) is answered 500 and logged with its cause', async t => {
  const { origin, entries } = await serve(t, {
    interceptors: [{ onUpgrade () { throw new TypeError('a bug in onUpgrade') } }]
  })
  const { response } = await rawUpgrade(origin, [], '/?A2A-Version=1.0')
  t.match(response, /^HTTP\/1\.1 500 /)
  t.same(entries('A2A call failed').map(entry => [entry.level, entry.err?.message]), [[50, 'a bug in onUpgrade']])
})

t.test('streams ended by shutdown are not logged as failures', async t => {
  const { fastify, origin, entries } = await serve(t, { shutdown: { completionGrace: 0, taskGrace: 200 } })
  const { task } = await result(origin, 'SendMessage', { message: userMessage('input') })
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const subscription = await openSse(origin, 'POST', { jsonrpc: '2.0', id: 's', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  await fastify.close()
  await subscription.ended
  t.equal(subscription.events.at(-1)?.data.error.message, 'Service unavailable: the server is shutting down', 'the stream ended with Unavailable')
  t.same(entries('A2A call failed'), [], 'and nothing was logged as a failure')
})

t.test('a WebSocket stream whose reader fell behind: one warning, and its call completes failed, as over SSE', async t => {
  const outcomes: CallOutcome['status'][] = []
  const chunk = 'y'.repeat(64 * 1024)
  const { origin, entries } = await serve(t, {
    websocket: { maxBufferedBytes: 256 * 1024 },
    interceptors: [{ onComplete (context, outcome) { if (context.method === 'SendStreamingMessage') outcomes.push(outcome.status) } }],
    executor: {
      async execute (_context, events) {
        for (let i = 0; i < 1000; i++) await events.artifact({ artifactId: 'big', parts: [{ text: chunk }] })
        await events.completed()
      }
    }
  })
  const { socket: slow, rest: head } = await rawUpgrade(origin, [], '/?A2A-Version=1.0')
  t.teardown(() => slow.destroy())
  slow.pause()
  slow.write(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'lagging', method: 'SendStreamingMessage', params: { message: userMessage('x') } })))
  const reader = frameReader(slow, head)
  slow.resume()
  for (;;) {
    const frame = JSON.parse((await reader.next()).payload.toString())
    if (frame.error !== undefined) break
  }
  const warnings = entries('A2A stream ended: its reader fell behind')
  t.equal(warnings.length, 1)
  t.equal(warnings[0]?.level, 40)
  t.match(warnings[0]?.droppedEvents, /^\d+$/)
  t.same(entries('A2A call failed'), [], 'not logged as a failure')
  t.same(outcomes, ['failed'], 'the interceptor is told the stream failed, not that the client left')
})

t.test('a WebSocket call\'s failure is logged with the request id of its connection\'s upgrade', async t => {
  class FailingStore extends MemoryTaskStore {
    override async get (): Promise<undefined> { throw new Error('the disk is on fire') }
  }
  const { origin, entries } = await serve(t, { taskStore: new FailingStore() })
  const client = await connect(wsUrl(origin))
  t.teardown(() => client.close())
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32603)
  const failed = entries('A2A call failed')
  t.same(failed.map(entry => entry.err?.message), ['the disk is on fire'])
  const upgrade = entries('incoming request').find(entry => entry.req?.url.startsWith('/?') === true)
  t.ok(upgrade?.reqId !== undefined && failed[0]?.reqId === upgrade.reqId, 'the upgrade\'s reqId')
})
