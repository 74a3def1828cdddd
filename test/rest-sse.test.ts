// Streaming over HTTP+JSON (spec §11.7), read with real HTTP clients: each event a bare
// StreamResponse in `data:`, errors before the first event as ordinary error responses,
// a mid-stream error as a last `event: error` carrying the error body, subscribe on GET
// and POST, and a client that leaves releasing its subscription.
import t from 'tap'
import { MemoryTaskStore, type Scope, type TaskChange } from '../lib/index.js'
import { A2A_JSON_UTF8, rest, restResult, restStream } from './helpers/rest.js'
import { eventually, openSse, startServer, userMessage, V1 } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const base = server.endpoint
const bus = server.fastify.a2a.bus

async function heldTask () {
  const { task } = await restResult(base, 'POST', '/message:send', { body: { message: userMessage('hold'), configuration: { returnImmediately: true } } })
  await eventually(async () => (await restResult(base, 'GET', `/tasks/${task.id}`)).status.state === 'TASK_STATE_WORKING')
  return task
}

t.test('POST /message:stream: text/event-stream, each event `data: <StreamResponse>` without an envelope', async t => {
  const reply = await restStream(base, 'POST', '/message:stream', { body: { message: userMessage('stream 2') } })
  t.equal(reply.status, 200)
  t.equal(reply.contentType, 'text/event-stream')
  const blocks = reply.text.split('\n\n')
  t.equal(blocks.pop(), '', 'the body ends with a blank line')
  t.ok(blocks.every(block => /^data: \{.*\}$/.test(block)), 'each event is one data line of JSON, with no event name')
  const events = blocks.map(block => JSON.parse(block.slice('data: '.length)))
  const { task } = events[0]
  t.same(events, [
    { task: { id: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: task.status.timestamp }, history: task.history } },
    { statusUpdate: { taskId: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_WORKING', timestamp: events[1].statusUpdate.status.timestamp } } },
    { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 1' }] } } },
    { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'stream', parts: [{ text: 'chunk 2' }] }, append: true, lastChunk: true } },
    { statusUpdate: { taskId: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_COMPLETED', timestamp: events[4].statusUpdate.status.timestamp } } }
  ])
  t.same(task.history[0].parts, [{ text: 'stream 2' }])
})

t.test('a direct message reply is the one event of its stream', async t => {
  const { events } = await restStream(base, 'POST', '/message:stream', { body: { message: userMessage('message yo') } })
  t.equal(events.length, 1)
  t.same(Object.keys(events[0]?.data), ['message'])
  t.same(events[0]?.data.message.parts, [{ text: 'yo' }])
})

t.test('subscribe on GET and on POST (with no body, or a JSON one): the snapshot first, then live events', async t => {
  const task = await heldTask()
  const viaGet = await openSse(`${base}/tasks/${task.id}:subscribe`, 'GET', undefined, 1)
  const viaPost = await openSse(`${base}/tasks/${task.id}:subscribe`, 'POST', undefined, 1)
  const viaPostJson = await openSse(`${base}/tasks/${task.id}:subscribe`, 'POST', {}, 1)
  const subscriptions = [viaGet, viaPost, viaPostJson]
  t.equal(bus.listenerCount(), 3)
  t.equal(viaGet.response.headers['content-type'], 'text/event-stream')
  await restResult(base, 'POST', `/tasks/${task.id}:cancel`)
  await Promise.all(subscriptions.map(subscription => subscription.ended))
  for (const { events } of subscriptions) {
    t.same(events.map(e => e.event), [undefined, undefined])
    t.equal(events[0]?.data.task.id, task.id)
    t.equal(events[0]?.data.task.status.state, 'TASK_STATE_WORKING')
    t.same(events[1]?.data, { statusUpdate: { taskId: task.id, contextId: task.contextId, status: events[1]?.data.statusUpdate.status } })
    t.equal(events[1]?.data.statusUpdate.status.state, 'TASK_STATE_CANCELED')
  }
  await eventually(() => bus.listenerCount() === 0)
})

t.test('an error before the first event is an ordinary error response with its HTTP status', async t => {
  const unknown = await restStream(base, 'GET', '/tasks/missing:subscribe')
  t.equal(unknown.status, 404)
  t.equal(unknown.contentType, A2A_JSON_UTF8)
  t.same(unknown.body, {
    error: {
      code: 404,
      status: 'NOT_FOUND',
      message: 'Task not found: missing',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'missing' } }]
    }
  })
  const done = (await restResult(base, 'POST', '/message:send', { body: { message: userMessage('x') } })).task
  const terminal = await restStream(base, 'POST', `/tasks/${done.id}:subscribe`)
  t.equal(terminal.status, 400)
  t.same([terminal.body.error.status, terminal.body.error.details[0].reason], ['FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION'])
  const toTerminal = await restStream(base, 'POST', '/message:stream', { body: { message: userMessage('x', { taskId: done.id }) } })
  t.same([toTerminal.status, toTerminal.body.error.details[0].reason], [400, 'UNSUPPORTED_OPERATION'])
  const invalid = await restStream(base, 'POST', '/message:stream', { body: {} })
  t.same([invalid.status, invalid.body.error.details[0].fieldViolations], [400, [{ field: 'message', description: 'is required' }]])
  const noVersion = await restStream(base, 'POST', '/message:stream', { body: { message: userMessage('x') }, headers: { 'content-type': 'application/json' } })
  t.same([noVersion.status, noVersion.body.error.details[0].reason], [400, 'VERSION_NOT_SUPPORTED'])
  t.equal(bus.listenerCount(), 0)
})

t.test('an error mid-stream is a last `event: error` whose data is the error body', async t => {
  // Stores the task and its working state, then fails every later status change.
  class FailingStore extends MemoryTaskStore {
    override async update (id: string, change: TaskChange, scope: Scope): Promise<number | undefined> {
      if (change.kind === 'status' && change.status.state !== 'TASK_STATE_WORKING') throw new Error('the disk is full')
      return await super.update(id, change, scope)
    }
  }
  const failing = await startServer({ taskStore: new FailingStore() })
  t.teardown(() => failing.close())
  const reply = await restStream(failing.endpoint, 'POST', '/message:stream', { body: { message: userMessage('stream 1') } })
  t.equal(reply.status, 200)
  t.same(reply.events.map(e => e.event), [undefined, undefined, undefined, 'error'])
  t.same(reply.events.map(e => Object.keys(e.data)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'error'])
  t.match(reply.text, /\n\nevent: error\ndata: \{"error":\{"code":500,"status":"INTERNAL","message":"Internal error"\}\}\n\n$/)
  t.same(reply.events[3]?.data, { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } })
  await eventually(() => failing.fastify.a2a.bus.listenerCount() === 0)
})

t.test('a client that disconnects releases its subscription; the task goes on', async t => {
  const streamed = await openSse(`${base}/message:stream`, 'POST', { message: userMessage('hold') }, 2)
  const taskId = streamed.events[0]?.data.task.id
  t.equal(bus.listenerCount(), 1)
  streamed.disconnect()
  await eventually(() => bus.listenerCount() === 0)
  t.equal((await restResult(base, 'GET', `/tasks/${taskId}`)).status.state, 'TASK_STATE_WORKING', 'the task outlives its stream')

  const subscribed = await openSse(`${base}/tasks/${taskId}:subscribe`, 'GET', undefined, 1)
  t.equal(bus.listenerCount(), 1)
  subscribed.disconnect()
  await eventually(() => bus.listenerCount() === 0)
  t.equal((await rest(base, 'POST', `/tasks/${taskId}:cancel`, { headers: V1 })).body.status.state, 'TASK_STATE_CANCELED')
})
