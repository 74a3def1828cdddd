// The executor API: what an executor sees, what its events do, and what happens when it
// misbehaves (throws, returns without answering, has a cancel hook; writes after the end are
// test/executor-faults.test.ts's).
import t, { type Test } from 'tap'
import {
  ContentTypeNotSupportedError, type AgentExecutor, type ExecutionContext, type TaskStore
} from '../lib/index.js'
import { MemoryTaskStore } from '../lib/store/memory.js'
import { call, eventually, result, startServer, stream, userMessage } from './helpers/server.js'

async function serve (t: Test, executor: AgentExecutor, extra = {}) {
  const server = await startServer({ executor, ...extra })
  t.teardown(() => server.close())
  return server.endpoint
}

t.test('the context carries message, ids, service parameters and a signal', async t => {
  let seen: ExecutionContext | undefined
  const url = await serve(t, {
    async execute (context, events) {
      seen = context
      await events.completed('done')
    }
  })
  const task = (await call(url, 'SendMessage', { message: userMessage('x', { contextId: 'c1' }), metadata: { k: 'v' } }, { 'a2a-version': '1.0', 'x-custom': 'yes' })).result.task
  t.equal(seen?.taskId, task.id)
  t.equal(seen?.contextId, 'c1')
  t.same(seen?.message.parts, [{ text: 'x' }])
  t.equal(seen?.task, undefined, 'no task yet on a new turn')
  t.same(seen?.metadata, { k: 'v' })
  t.equal(seen?.serviceParams['x-custom'], 'yes')
  t.equal(seen?.serviceParams['a2a-version'], '1.0')
  t.equal(seen?.serviceParams[':path'], '/')
  t.equal(seen?.tenant, '')
  t.same(seen?.extensions, [])
  t.ok(seen?.signal instanceof AbortSignal)
  t.same(task.status.message.parts, [{ text: 'done' }])
})

t.test('an executor that returns without a task or message → -32006 InvalidAgentResponse', async t => {
  const url = await serve(t, { async execute () {} })
  const { error } = await call(url, 'SendMessage', { message: userMessage('x') })
  t.same(error, {
    code: -32006,
    message: 'Invalid agent response: the executor returned without a task or a message',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_AGENT_RESPONSE', domain: 'a2a-protocol.org' }]
  })
  const streamed = await stream(url, 'SendStreamingMessage', { message: userMessage('x') })
  t.equal(streamed.body.error.code, -32006, 'before the first event: a plain error response')
})

t.test('an A2A error thrown before any task is the call\'s answer', async t => {
  const url = await serve(t, { async execute () { throw new ContentTypeNotSupportedError('image/gif') } })
  const { error } = await call(url, 'SendMessage', { message: userMessage('x') })
  t.equal(error.code, -32005)
  t.equal(error.data[0].reason, 'CONTENT_TYPE_NOT_SUPPORTED')
})

t.test('a part in a media type the card does not declare → -32005', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const { error } = await call(server.endpoint, 'SendMessage', { message: userMessage('x', { parts: [{ raw: 'aGk=', mediaType: 'image/png' }] }) })
  t.same(error, {
    code: -32005,
    message: 'Content type not supported: image/png',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CONTENT_TYPE_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { mediaType: 'image/png', part: 'message.parts[0]' } }]
  })
  const declared = await call(server.endpoint, 'SendMessage', { message: userMessage('x', { parts: [{ data: { a: 1 }, mediaType: 'application/json' }] }) })
  t.equal(declared.result.task.status.state, 'TASK_STATE_COMPLETED')
  const lenient = await startServer({ allowUndeclaredInputModes: true })
  t.teardown(() => lenient.close())
  const accepted = await call(lenient.endpoint, 'SendMessage', { message: userMessage('x', { parts: [{ raw: 'aGk=', mediaType: 'image/png' }] }) })
  t.equal(accepted.result.task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('an artifact event keeps the parts it was sent with when the executor reuses its array', async t => {
  const url = await serve(t, {
    async execute (_context, events) {
      const parts = [{ text: 'chunk 1' }]
      await events.working()
      await events.artifact({ artifactId: 'a', parts })
      parts[0] = { text: 'chunk 2' }
      await events.artifact({ artifactId: 'a', parts }, { append: true })
      parts.push({ text: 'chunk 3' })
      await events.working()
      parts.length = 0
      await events.completed()
    }
  })
  const streamed = await stream(url, 'SendStreamingMessage', { message: userMessage('x') })
  const artifacts = streamed.events.map(event => event.data.result.artifactUpdate).filter(update => update !== undefined)
  t.same(artifacts.map(update => update.artifact.parts), [[{ text: 'chunk 1' }], [{ text: 'chunk 2' }]], 'each event: the parts as they were when sent')
  const taskId = artifacts[0].taskId
  const stored = await result(url, 'GetTask', { id: taskId })
  t.same(stored.artifacts, [{ artifactId: 'a', parts: [{ text: 'chunk 1' }, { text: 'chunk 2' }] }], 'the stored artifact: both chunks, nothing added after')
})

t.test('a status message keeps the parts it was sent with when the executor reuses its array', async t => {
  const url = await serve(t, {
    async execute (_context, events) {
      const parts = [{ text: 'thinking' }]
      await events.working({ messageId: 'm-working', parts })
      parts[0] = { text: 'changed' }
      parts.push({ text: 'added' })
      await events.completed('done')
    }
  })
  const streamed = await stream(url, 'SendStreamingMessage', { message: userMessage('x') })
  const working = streamed.events.map(event => event.data.result.statusUpdate).find(update => update?.status.state === 'TASK_STATE_WORKING')
  t.same(working?.status.message.parts, [{ text: 'thinking' }], 'the event: the parts as they were when sent')
  const stored = await result(url, 'GetTask', { id: working.taskId })
  t.same(stored.history.find((message: any) => message.messageId === 'm-working')?.parts, [{ text: 'thinking' }], 'the stored message too')
})

t.test('an invalid artifact is refused to the executor with InvalidAgentResponse', async t => {
  let refusal: any
  const url = await serve(t, {
    async execute (_context, events) {
      try {
        await events.artifact({ artifactId: 'a', parts: [] })
      } catch (error) {
        refusal = error
      }
      await events.completed()
    }
  })
  await result(url, 'SendMessage', { message: userMessage('x') })
  t.equal(refusal?.code, 'A2A_ERR_INVALID_AGENT_RESPONSE')
  t.match(refusal?.message, /artifact\.parts must not have fewer than 1 items/)
})

t.test('an artifact whose parts are not an array is refused the same way, and the task fails', async t => {
  let refusal: any
  const url = await serve(t, {
    async execute (_context, events) {
      try {
        await events.artifact({ artifactId: 'a', parts: 'chunk' as any })
      } catch (error) {
        refusal = error
      }
      await events.completed()
    }
  })
  const { task } = await result(url, 'SendMessage', { message: userMessage('x') })
  t.equal(refusal?.code, 'A2A_ERR_INVALID_AGENT_RESPONSE')
  t.match(refusal?.message, /^Invalid agent response: artifact\.parts must be array/)
  t.equal(task.status.state, 'TASK_STATE_FAILED', 'an invalid event ends the task')
})

t.test('an executor that stops without a final state leaves the task FAILED, not WORKING', async t => {
  const url = await serve(t, { async execute (_context, events) { await events.working() } })
  const { task } = await result(url, 'SendMessage', { message: userMessage('x') })
  t.equal(task.status.state, 'TASK_STATE_FAILED')
  t.same(task.status.message.parts, [{ text: 'the agent stopped without a final state' }])
})

t.test('the cancel hook runs after the signal is aborted and may write the final state', async t => {
  const calls: string[] = []
  const url = await serve(t, {
    async execute (context, events) {
      await events.working()
      await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      calls.push('aborted')
    },
    async cancel (context, events) {
      calls.push(`cancel ${context.signal.aborted}`)
      await events.canceled('stopped by request')
    }
  })
  const { task } = await result(url, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(url, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  const canceled = await result(url, 'CancelTask', { id: task.id })
  t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
  t.same(canceled.status.message.parts, [{ text: 'stopped by request' }])
  t.same(calls.sort(), ['aborted', 'cancel true'], 'the hook saw the signal aborted; the execution ended')
})

t.test('a store that fails → -32603 Internal error, detail not shown; the server goes on', async t => {
  const store = new MemoryTaskStore()
  let broken = true
  const failing: TaskStore = {
    create: (task, scope) => broken ? Promise.reject(new Error('disk on fire')) : store.create(task, scope),
    get: (id, scope) => store.get(id, scope),
    update: (id, change, scope) => store.update(id, change, scope),
    list: (query, scope) => store.list(query, scope)
  }
  const server = await startServer({ taskStore: failing })
  t.teardown(() => server.close())
  const streamed = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage('x') })
  t.same(streamed.body.error, { code: -32603, message: 'Internal error' })
  broken = false
  t.equal((await result(server.endpoint, 'SendMessage', { message: userMessage('x') })).task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('a full memory store refuses new tasks with 503-class Unavailable, then evicts terminal ones', async t => {
  const server = await startServer({ taskStore: new MemoryTaskStore({ maxTasks: 1 }) })
  t.teardown(() => server.close())
  const waiting = (await result(server.endpoint, 'SendMessage', { message: userMessage('input') })).task
  const refused = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage('x') })
  t.same(refused.body.error, { code: -32603, message: 'Service unavailable: the task store is full' })
  await result(server.endpoint, 'CancelTask', { id: waiting.id })
  const next = (await result(server.endpoint, 'SendMessage', { message: userMessage('x') })).task
  t.equal(next.status.state, 'TASK_STATE_COMPLETED', 'the terminal task was evicted to make room')
  t.equal((await call(server.endpoint, 'GetTask', { id: waiting.id })).error.code, -32001)
})
