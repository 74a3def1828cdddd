// The client's numeric options: `timeout` (a transport's default and a call's own),
// `maxPending` and `connectTimeout` are checked where they are given, naming the option.
// A bad value is a TypeError before anything is sent, never a timer that fires at once
// (setTimeout takes 0, NaN and Infinity as 1 ms) or a cap that never holds.
import t from 'tap'
import WebSocket, { WebSocketServer } from 'ws'
import {
  A2AClient, JsonRpcTransport, RestTransport, WebSocketTransport, createClient,
  type AgentCard, type Transport
} from '../lib/client/index.js'
import { startServer, userMessage } from './helpers/server.js'

const agent = await startServer()
t.teardown(() => agent.close())
const wsOrigin = agent.origin.replace('http', 'ws')

const BAD_TIMEOUTS = [0, -1, NaN, -Infinity, '100' as unknown as number]
const BAD_LIMITS = [0, -1, 1.5, NaN, '8' as unknown as number]
const timeoutError = (name: string, value: unknown) => new TypeError(`${name} must be a positive number of ms or Infinity; got ${String(value)}`)
const limitError = (name: string, value: unknown) => new TypeError(`${name} must be a positive integer or Infinity; got ${String(value)}`)

/** A fetch that counts the requests it is asked to send. */
function countingFetch () {
  const spy = { requests: 0, fetch: ((input: RequestInfo | URL, init?: RequestInit) => { spy.requests++; return fetch(input, init) }) as typeof fetch }
  return spy
}

t.test("a transport's default timeout is checked when the transport is made", async t => {
  for (const bad of BAD_TIMEOUTS) {
    t.throws(() => new JsonRpcTransport({ url: agent.endpoint, timeout: bad }), timeoutError('timeout', bad))
    t.throws(() => new RestTransport({ url: agent.origin, timeout: bad }), timeoutError('timeout', bad))
    t.throws(() => new WebSocketTransport({ url: wsOrigin, timeout: bad }), timeoutError('timeout', bad))
  }
})

t.test("maxPending and connectTimeout are checked when the WebSocket transport is made", async t => {
  for (const bad of BAD_LIMITS) t.throws(() => new WebSocketTransport({ url: wsOrigin, maxPending: bad }), limitError('maxPending', bad))
  for (const bad of BAD_TIMEOUTS) t.throws(() => new WebSocketTransport({ url: wsOrigin, connectTimeout: bad }), timeoutError('connectTimeout', bad))
})

t.test('createClient checks the options it passes on', async t => {
  const card = (await (await fetch(`${agent.origin}/.well-known/agent-card.json`)).json()) as AgentCard
  await t.rejects(createClient(agent.origin, { card, WebSocket, maxPending: 0 }), limitError('maxPending', 0))
  await t.rejects(createClient(agent.origin, { card, WebSocket, connectTimeout: NaN }), timeoutError('connectTimeout', NaN))
  await t.rejects(createClient(agent.origin, { card, timeout: -1 }), timeoutError('timeout', -1))
})

t.test("a call's own bad timeout fails that call before anything is sent: a unary call rejects, a stream throws from its iterator", async t => {
  const jsonRpc = countingFetch()
  const rest = countingFetch()
  let upgrades = 0
  const onConnection = () => { upgrades++ }
  agent.fastify.websocketServer.on('connection', onConnection)
  t.teardown(() => agent.fastify.websocketServer.off('connection', onConnection))
  const transports: Transport[] = [
    new JsonRpcTransport({ url: agent.endpoint, fetch: jsonRpc.fetch }),
    new RestTransport({ url: agent.origin, fetch: rest.fetch }),
    new WebSocketTransport({ url: wsOrigin }),
    new WebSocketTransport({ url: wsOrigin, dialect: 'a2a.v1' })
  ]
  for (const transport of transports) {
    const client = new A2AClient(transport)
    t.teardown(() => client.close())
    for (const bad of BAD_TIMEOUTS) {
      await t.rejects(client.getTask({ id: 'x' }, { timeout: bad }), timeoutError('timeout', bad), transport.binding)
      const stream = client.sendStreamingMessage({ message: userMessage('stream 2') }, { timeout: bad })
      await t.rejects(stream.next(), timeoutError('timeout', bad), transport.binding)
      t.same(await stream.next(), { done: true, value: undefined }, 'the failed stream is over')
    }
  }
  t.equal(jsonRpc.requests, 0)
  t.equal(rest.requests, 0)
  t.equal(upgrades, 0)

  // The same calls with a good timeout go through on each transport, Infinity being none.
  for (const transport of transports) {
    const client = new A2AClient(transport)
    t.equal((await client.sendMessage({ message: userMessage('quick') }, { timeout: Infinity })).task?.status.state, 'TASK_STATE_COMPLETED', transport.binding)
    const states: string[] = []
    for await (const event of client.sendStreamingMessage({ message: userMessage('stream 2') }, { timeout: 30_000 })) {
      if (event.statusUpdate !== undefined) states.push(event.statusUpdate.status.state)
    }
    t.equal(states.at(-1), 'TASK_STATE_COMPLETED', transport.binding)
  }
})

t.test('connectTimeout: Infinity waits for a slow upgrade, it does not time out at once', async t => {
  // An upgrade answered 50 ms late: a timer of Infinity ms (1 ms to setTimeout) would fail it.
  const slow = new WebSocketServer({ host: '127.0.0.1', port: 0, verifyClient: (_info, done) => { setTimeout(() => done(true), 50) } })
  t.teardown(() => new Promise<void>(resolve => slow.close(() => resolve())))
  await new Promise<void>(resolve => slow.on('listening', resolve))
  const port = (slow.address() as { port: number }).port
  const transport = new WebSocketTransport({ url: `ws://127.0.0.1:${port}/`, connectTimeout: Infinity })
  t.teardown(() => transport.close())
  await t.resolves(transport.connect())
  t.equal(slow.clients.size, 1)
})

t.test('maxPending: Infinity sets no cap on the connection', async t => {
  const transport = new WebSocketTransport({ url: wsOrigin, maxPending: Infinity })
  const client = new A2AClient(transport)
  t.teardown(() => client.close())
  const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => client.sendMessage({ message: userMessage(`echo ${i}`) })))
  t.equal(answers.length, 5)
  t.ok(answers.every(answer => answer.task?.status.state === 'TASK_STATE_COMPLETED'))
})
