// Seed 001, liveness and going away (1001): a silent peer is pinged and closed when no pong
// comes; a connection with no application message and nothing in progress is closed when
// idle (pongs do not count); fastify.close() closes every connection. Timings are options,
// small here.
import t from 'tap'
import { startServer, userMessage } from './helpers/server.js'
import { frameReader, pingedThenClosedIdle, rawUpgrade } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

t.test('a peer that does not answer the ping is closed with 1001; one that does stays', async t => {
  const server = await startServer({ websocket: { a2aV1: { pingInterval: 150, pongTimeout: 1000, idleTimeout: 0 } } })
  t.teardown(() => server.close())
  const answering = await connectV1(v1Url(server.origin))
  t.teardown(() => answering.close())
  const { socket, response, rest } = await rawUpgrade(server.origin, ['Sec-WebSocket-Protocol: a2a.v1'])
  t.match(response, /^HTTP\/1\.1 101 /)
  await pingedThenClosedIdle(t, frameReader(socket, rest))
  socket.destroy()
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal(answering.socket.readyState, answering.socket.OPEN, 'the ws client answered every ping')
  t.equal((await answering.request('r', 'GetTask', { id: 'x' })).error.code, -32001)
})

t.test('idle: no application message for idleTimeout closes with 1001, pongs notwithstanding', async t => {
  const server = await startServer({ websocket: { a2aV1: { pingInterval: 50, pongTimeout: 1000, idleTimeout: 300 } } })
  t.teardown(() => server.close())
  const client = await connectV1(v1Url(server.origin))
  let pongs = 0
  client.socket.on('ping', () => { pongs++ })
  t.same(await client.closed, { code: 1001, reason: 'idle timeout' })
  t.ok(pongs > 0, 'the client answered pings, which are no application messages')
})

t.test('idle: a request in progress keeps the connection; the timeout counts from its end', async t => {
  const server = await startServer({ websocket: { a2aV1: { pingInterval: 0, idleTimeout: 500 } } })
  t.teardown(() => server.close())
  const client = await connectV1(v1Url(server.origin))
  client.call('h', 'SendStreamingMessage', { message: userMessage('hold') })
  const task = (await client.nextFor('h')).result.task
  await new Promise(resolve => setTimeout(resolve, 800))
  t.equal(client.socket.readyState, client.socket.OPEN, 'a held stream is no idleness')
  const other = await connectV1(v1Url(server.origin))
  await other.request('c', 'CancelTask', { id: task.id })
  other.close()
  let ended
  do ended = await client.nextFor('h'); while (ended.streamEnd !== true && ended.error === undefined)
  t.equal(ended.streamEnd, true, 'the held stream ended with the cancel')
  // Counted from the stream's end, not from the request that opened it: the connection still serves.
  t.equal((await client.request('g', 'GetTask', { id: task.id })).result?.status.state, 'TASK_STATE_CANCELED', 'a request after the stream ended is served')
  t.same(await client.closed, { code: 1001, reason: 'idle timeout' }, 'closed once nothing is in progress')
})

t.test('fastify.close(): every a2a.v1 connection is closed with 1001', async t => {
  const server = await startServer({ shutdown: { completionGrace: 100, taskGrace: 100 } })
  const client = await connectV1(v1Url(server.origin))
  t.equal((await client.request('r', 'GetTask', { id: 'x' })).error.code, -32001)
  const closing = server.close()
  t.same(await client.closed, { code: 1001, reason: 'server shutting down' })
  await closing
})
