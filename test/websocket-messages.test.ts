// Seed 000 §3 and §5: one JSON-RPC message per text frame, the JSON-RPC binding's methods,
// params, results and errors, notifications, binary frames, and the connection staying
// open through bad input.
import t, { type Test } from 'tap'
import { startServer, userMessage } from './helpers/server.js'
import { connect, wsUrl, type WsClient } from './helpers/ws.js'

const server = await startServer()
t.teardown(() => server.close())
const client = await connect(wsUrl(server.origin))
t.teardown(() => client.close())

async function stillOpen (t: Test, socket: WsClient = client) {
  const reply = await socket.request('GetTask', { id: 'still-open' })
  t.equal(reply.error.code, -32001, 'the connection keeps serving')
}

t.test('a unary call: one success frame with the request id', async t => {
  const reply = await client.request('SendMessage', { message: userMessage('over ws') }, 'ws-1')
  t.same(Object.keys(reply), ['jsonrpc', 'id', 'result'])
  t.equal(reply.jsonrpc, '2.0')
  t.equal(reply.id, 'ws-1')
  t.equal(reply.result.task.status.state, 'TASK_STATE_COMPLETED')
  t.same(reply.result.task.artifacts, [{ artifactId: 'echo', parts: [{ text: 'over ws' }] }])
  const got = await client.request('GetTask', { id: reply.result.task.id, historyLength: 0 }, 7)
  t.equal(got.id, 7)
  t.same(Object.keys(got.result).sort(), ['artifacts', 'contextId', 'id', 'status'])
})

t.test('an A2A error frame carries the JSON-RPC code and ErrorInfo', async t => {
  const reply = await client.request('GetTask', { id: 'task-9' }, '1')
  t.same(reply, {
    jsonrpc: '2.0',
    id: '1',
    error: {
      code: -32001,
      message: 'Task not found: task-9',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'task-9' } }]
    }
  })
})

t.test('invalid params → -32602 with BadRequest', async t => {
  const reply = await client.request('SendMessage', { message: { messageId: 'm', role: 'user', parts: [{ text: 'x' }] } })
  t.same(reply.error.data, [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.role', description: 'must be equal to one of the allowed values' }] }])
  t.equal(reply.error.code, -32602)
})

t.test('v0.3 method names → -32601', async t => {
  for (const method of ['message/send', 'tasks/get', 'tasks/resubscribe']) {
    const reply = await client.request(method, {}, method)
    t.same(reply, { jsonrpc: '2.0', id: method, error: { code: -32601, message: `Method not found: ${method}` } })
  }
})

t.test('a JSON array → -32600; invalid JSON → -32700 with id null', async t => {
  client.send('[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]')
  t.same(await client.next(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request payload validation error: batch requests are not supported' } })
  client.send('{"jsonrpc":"2.0","id":2,"method":')
  t.same(await client.next(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload' } })
  client.send('{"jsonrpc":"2.0","id":{"no":1},"method":"GetTask"}')
  t.same((await client.next()).error.code, -32600)
  await stillOpen(t)
})

t.test('a binary frame → -32700 with id null; the connection stays open', async t => {
  client.socket.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'bin', method: 'GetTask', params: { id: 'x' } })), { binary: true })
  t.same(await client.next(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload' } })
  await stillOpen(t)
})

t.test('a notification runs and gets no frame, whether it succeeds or fails', async t => {
  const contextId = `ws-notify-${Date.now()}`
  client.send({ jsonrpc: '2.0', method: 'SendMessage', params: { message: userMessage('notified', { contextId }) } })
  client.send({ jsonrpc: '2.0', method: 'GetTask', params: { id: 'missing' } })
  client.send({ jsonrpc: '2.0', method: 'message/send', params: {} })
  client.send({ jsonrpc: '2.0', method: 'GetTask', params: {} })
  t.same(await client.quiet(150), [], 'no frame for any notification')
  const listed = await client.request('ListTasks', { contextId })
  t.equal(listed.result.tasks.length, 1, 'the notification ran')
})

t.test('a streaming method sent as a notification is not run', async t => {
  const contextId = `ws-stream-notify-${Date.now()}`
  client.send({ jsonrpc: '2.0', method: 'SendStreamingMessage', params: { message: userMessage('x', { contextId }) } })
  t.same(await client.quiet(100), [])
  t.equal((await client.request('ListTasks', { contextId })).result.tasks.length, 0)
})

t.test('SubscribeToTask sent as a notification is not run: no frame, no subscription taken', async t => {
  const methods: string[] = []
  const watched = await startServer({ interceptors: [{ before (context) { methods.push(context.method) } }] })
  t.teardown(() => watched.close())
  const watcher = await connect(wsUrl(watched.origin))
  t.teardown(() => watcher.close())
  const { task } = (await watcher.request('SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })).result
  watcher.send({ jsonrpc: '2.0', method: 'SubscribeToTask', params: { id: task.id } })
  t.equal((await watcher.request('GetTask', { id: task.id })).result.status.state, 'TASK_STATE_WORKING', 'the next request is answered')
  t.equal(watched.fastify.a2a.bus.listenerCount(), 0, 'no subscription taken')
  t.equal((await watcher.request('CancelTask', { id: task.id })).result.status.state, 'TASK_STATE_CANCELED')
  t.same(await watcher.quiet(100), [], 'no frame for the notification, not even when the task ends')
  t.same(methods, ['SendMessage', 'GetTask', 'CancelTask'], 'the notification never reached the call chain')
})

t.test('ids keep their JSON type; a null id is answered with null', async t => {
  for (const id of ['s', 3, 0, 2.5, '']) {
    t.same((await client.request('GetTask', { id: 'x' }, id)).id, id)
  }
  client.send({ jsonrpc: '2.0', id: null, method: 'GetTask', params: { id: 'x' } })
  const reply = await client.next()
  t.equal(reply.id, null)
  t.equal(reply.error.code, -32001)
})

t.test('every method is offered, with the JSON-RPC binding\'s results', async t => {
  const task = (await client.request('SendMessage', { message: userMessage('input') })).result.task
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const config = (await client.request('CreateTaskPushNotificationConfig', { taskId: task.id, id: 'c1', url: 'https://hooks.example.com/x' })).result
  t.same(config, { id: 'c1', taskId: task.id, url: 'https://hooks.example.com/x' })
  t.same((await client.request('GetTaskPushNotificationConfig', { taskId: task.id, id: 'c1' })).result, config)
  t.same((await client.request('ListTaskPushNotificationConfigs', { taskId: task.id })).result, { configs: [config], nextPageToken: '' })
  t.same((await client.request('DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'c1' })).result, {})
  const listed = (await client.request('ListTasks', { pageSize: 1 })).result
  t.same(Object.keys(listed).sort(), ['nextPageToken', 'pageSize', 'tasks', 'totalSize'])
  t.equal((await client.request('CancelTask', { id: task.id })).result.status.state, 'TASK_STATE_CANCELED')
  const card = (await client.request('GetExtendedAgentCard', undefined)).result
  t.equal(card.name, 'fastify-a2a conformance agent')
})
