// Seed 000 §3: up to 64 requests in progress per connection (a stream counts until it
// ends); past it a request is refused with -32603 and RetryInfo, a notification with a
// null id; responses come in any order, correlated by id.
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { a2aWebSocket } from '../lib/index.js'
import { logLines } from './helpers/logs.js'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { clientFrame, connect, frameReader, rawUpgrade, wsUrl } from './helpers/ws.js'

const server = await startServer()
t.teardown(() => server.close())

t.test('a slow call does not hold back a fast one', async t => {
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  client.send({ jsonrpc: '2.0', id: 'slow', method: 'SendMessage', params: { message: userMessage('sleep 300') } })
  client.send({ jsonrpc: '2.0', id: 'fast', method: 'GetTask', params: { id: 'x' } })
  t.equal((await client.next()).id, 'fast')
  t.equal((await client.next()).id, 'slow')
})

t.test('64 held streams fill the connection; the 65th request and a notification are refused, not run', async t => {
  const { socket, response, rest } = await rawUpgrade(server.origin, [], '/?A2A-Version=1.0')
  t.match(response, /^HTTP\/1\.1 101 /)
  t.teardown(() => socket.destroy())
  const reader = frameReader(socket, rest)
  const contextId = `inflight-${Date.now()}`
  const frames = []
  for (let i = 0; i < 64; i++) {
    frames.push(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: `hold-${i}`, method: 'SendStreamingMessage', params: { message: userMessage('hold', { contextId }) } })))
  }
  frames.push(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'one-too-many', method: 'GetTask', params: { id: 'x' } })))
  frames.push(clientFrame(JSON.stringify({ jsonrpc: '2.0', method: 'SendMessage', params: { message: userMessage('notified', { contextId: `${contextId}-n` }) } })))
  socket.write(Buffer.concat(frames), 'latin1')

  const refusals = []
  const started = new Set<string>()
  while (refusals.length < 2 || started.size < 64) {
    const frame = JSON.parse((await reader.next()).payload.toString())
    if (frame.error !== undefined) refusals.push(frame)
    else started.add(frame.id)
  }
  const retry = { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }
  t.same(refusals, [
    { jsonrpc: '2.0', id: 'one-too-many', error: { code: -32603, message: 'Service unavailable: 64 requests are in progress on this connection', data: [retry] } },
    { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Service unavailable: 64 requests are in progress on this connection', data: [retry] } }
  ])
  const checker = await connect(wsUrl(server.origin))
  t.teardown(() => checker.close())
  t.equal((await checker.request('ListTasks', { contextId: `${contextId}-n` })).result.totalSize, 0, 'the refused notification did not run')
  const held = (await checker.request('ListTasks', { contextId, pageSize: 100 })).result.tasks
  t.equal(held.length, 64)

  // Ending one stream frees one slot.
  await checker.request('CancelTask', { id: held[0].id })
  await eventually(async () => {
    socket.write(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'retry', method: 'GetTask', params: { id: held[0].id } })))
    for (;;) {
      const frame = JSON.parse((await reader.next()).payload.toString())
      if (frame.id === 'retry') return frame.result?.status.state === 'TASK_STATE_CANCELED'
    }
  })
  for (const task of held.slice(1)) await checker.request('CancelTask', { id: task.id })
})

t.test('the limit is an option', async t => {
  const small = await startServer({ websocket: { maxInFlight: 1 } })
  t.teardown(() => small.close())
  const client = await connect(wsUrl(small.origin))
  t.teardown(() => client.close())
  client.send({ jsonrpc: '2.0', id: 'a', method: 'SendMessage', params: { message: userMessage('sleep 100') } })
  client.send({ jsonrpc: '2.0', id: 'b', method: 'GetTask', params: { id: 'x' } })
  const first = await client.next()
  t.equal(first.id, 'b')
  t.equal(first.error.message, 'Service unavailable: 1 requests are in progress on this connection')
  t.equal((await client.next()).id, 'a')
})

t.test('refusals past the limit are answered, not logged: a client flooding frames does not flood the log', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'trace', stream } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, websocket: { maxInFlight: 1 } })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const client = await connect(wsUrl(`http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`))
  t.teardown(() => client.close())
  client.send({ jsonrpc: '2.0', id: 'held', method: 'SendMessage', params: { message: userMessage('sleep 200') } })
  for (let n = 0; n < 20; n++) client.send({ jsonrpc: '2.0', id: n, method: 'GetTask', params: { id: 'x' } })
  const refusals = []
  for (let n = 0; n < 20; n++) refusals.push((await client.next()).error?.message)
  t.same(refusals, Array.from({ length: 20 }, () => 'Service unavailable: 1 requests are in progress on this connection'))
  t.equal((await client.next()).id, 'held')
  t.same(lines.filter(line => JSON.parse(line).level >= 40), [], 'nothing at warn or above')
})
