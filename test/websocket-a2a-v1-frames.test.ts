// Seed 001, frames: one JSON-RPC 2.0 object per text frame; a unary answer and each stream
// event is a `result` frame for the request's id; a stream ends with `streamEnd` (no
// `result`), a failing one with an error frame instead; errors carry the binding's codes
// and data, as in seed 000, and leave the connection open.
import t from 'tap'
import { startServer, userMessage } from './helpers/server.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

const server = await startServer()
t.teardown(() => server.close())
const client = await connectV1(v1Url(server.origin))
t.teardown(() => client.close())

t.test('a unary call: one result frame with the request id', async t => {
  const reply = await client.request('u1', 'SendMessage', { message: userMessage('over a2a.v1') })
  t.same(Object.keys(reply), ['jsonrpc', 'id', 'result'])
  t.equal(reply.jsonrpc, '2.0')
  t.equal(reply.id, 'u1')
  t.equal(reply.result.task.status.state, 'TASK_STATE_COMPLETED')
  t.same(reply.result.task.artifacts, [{ artifactId: 'echo', parts: [{ text: 'over a2a.v1' }] }])
  const got = await client.request(7, 'GetTask', { id: reply.result.task.id, historyLength: 0 })
  t.equal(got.id, 7, 'a numeric id keeps its type')
  t.same(Object.keys(got.result).sort(), ['artifacts', 'contextId', 'id', 'status'])
})

t.test('a stream: a result frame per event, then exactly one streamEnd frame', async t => {
  const frames = await client.stream('st', 'SendStreamingMessage', { message: userMessage('stream 2') })
  const results = frames.slice(0, -1)
  t.ok(results.every(f => Object.keys(f).join() === 'jsonrpc,id,result' && f.id === 'st'))
  t.same(results.map(f => Object.keys(f.result)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  const task = results[0].result.task
  t.same(results[3].result, { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 2' }] }, append: true, lastChunk: true } })
  t.equal(results[4].result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  t.same(frames.at(-1), { jsonrpc: '2.0', id: 'st', streamEnd: true })
  t.same(await client.quiet(50), [], 'nothing after streamEnd')
})

t.test('a direct message reply: one result frame, then streamEnd', async t => {
  const frames = await client.stream('dm', 'SendStreamingMessage', { message: userMessage('message hello') })
  t.equal(frames.length, 2)
  t.same(frames[0].result.message.parts, [{ text: 'hello' }])
  t.same(frames[1], { jsonrpc: '2.0', id: 'dm', streamEnd: true })
})

t.test('a failing stream ends with an error frame for its id, and no streamEnd', async t => {
  const frames = await client.stream('sub', 'SubscribeToTask', { id: 'missing' })
  t.same(frames, [{
    jsonrpc: '2.0',
    id: 'sub',
    error: { code: -32001, message: 'Task not found: missing', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'missing' } }] }
  }])
  t.same(await client.quiet(50), [])
})

t.test('call errors are JSON-RPC error frames of the one table; the connection stays open', async t => {
  t.same(await client.request('m', 'message/send', {}), { jsonrpc: '2.0', id: 'm', error: { code: -32601, message: 'Method not found: message/send' } })
  const invalid = await client.request('p', 'SendMessage', { message: { messageId: 'm', role: 'user', parts: [{ text: 'x' }] } })
  t.same(invalid.error, {
    code: -32602,
    message: 'Invalid parameters: message.role must be equal to one of the allowed values',
    data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.role', description: 'must be equal to one of the allowed values' }] }]
  })
  t.same(await client.request('o', 'GetTask', []), { jsonrpc: '2.0', id: 'o', error: { code: -32602, message: 'Invalid parameters: params must be an object', data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'params', description: 'must be an object' }] }] } })
  t.equal(client.socket.readyState, client.socket.OPEN)
  t.equal((await client.request('still', 'GetTask', { id: 'x' })).error.code, -32001)
})

t.test('requests are multiplexed: a slow call does not hold back a fast one', async t => {
  client.call('slow', 'SendMessage', { message: userMessage('sleep 200') })
  client.call('fast', 'GetTask', { id: 'x' })
  t.equal((await client.next()).id, 'fast')
  t.equal((await client.next()).id, 'slow')
})
