// JsonRpcTransport over fetch against a real server: headers, abort and timeout of a unary
// call and of a stream (which releases the subscription), a stream cut mid-way, and
// answers that are not JSON-RPC.
import { getEventListeners } from 'node:events'
import t from 'tap'
import type { FastifyRequest } from 'fastify'
import {
  A2AClient, CallTimeoutError, ConnectionError, JsonRpcTransport, StreamIncompleteError, UnexpectedStatusError
} from '../lib/client/index.js'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { processWarnings } from './helpers/logs.js'

/** How each call ended, as the server's interceptors saw it, by method. */
const outcomes: string[] = []
/** The HTTP request of each call, to cut its connection. */
const requests: FastifyRequest[] = []
const server = await startServer({
  interceptors: [{
    before (_context, call) { if (call.request !== undefined) requests.push(call.request) },
    onComplete (context, outcome) { outcomes.push(`${context.method} ${outcome.status}`) }
  }]
})
t.teardown(() => server.close())

const client = (options: Partial<ConstructorParameters<typeof JsonRpcTransport>[0]> = {}) =>
  new A2AClient(new JsonRpcTransport({ url: server.endpoint, ...options }))

t.test('A2A-Version 1.0 and the service parameters go as headers of every call', async t => {
  const a2a = client({ serviceParams: { 'X-Trace': 'abc' } })
  const answer = await a2a.sendMessage({ message: userMessage('params') })
  t.match(answer.task?.artifacts?.[0]?.parts[0]?.data, { 'a2a-version': '1.0', 'x-trace': 'abc', 'content-type': 'application/json' })
})

t.test('aborting a unary call rejects it with the reason', async t => {
  const a2a = client()
  const controller = new AbortController()
  const contextId = `abort-${Date.now()}`
  const call = a2a.sendMessage({ message: userMessage('hold', { contextId }) }, { signal: controller.signal })
  await eventually(async () => (await a2a.listTasks({ contextId })).tasks[0]?.status.state === 'TASK_STATE_WORKING')
  controller.abort()
  await t.rejects(call, { name: 'AbortError' })
  await a2a.cancelTask({ id: (await a2a.listTasks({ contextId })).tasks[0]!.id })
})

t.test('twenty calls sharing one signal: one listener on it, no MaxListeners warning, and its abort rejects them all', async t => {
  const warnings = processWarnings(t)
  const a2a = client()
  const controller = new AbortController()
  const contextId = `shared-${Date.now()}`
  const calls = Array.from({ length: 20 }, () => a2a.sendMessage({ message: userMessage('hold', { contextId }) }, { signal: controller.signal }))
  t.equal(getEventListeners(controller.signal, 'abort').length, 1, 'one listener for the twenty calls')
  await eventually(async () => (await a2a.listTasks({ contextId })).tasks.length === 20)
  controller.abort(new Error('enough'))
  for (const call of calls) await t.rejects(call, { message: 'enough' })
  await new Promise(resolve => setImmediate(resolve))
  t.same(warnings, [], 'no warning')
  for (const task of (await a2a.listTasks({ contextId })).tasks) await a2a.cancelTask({ id: task.id })

  const done = new AbortController()
  const answers = await Promise.all(Array.from({ length: 20 }, () => a2a.sendMessage({ message: userMessage('hello') }, { signal: done.signal })))
  t.equal(answers.filter(answer => answer.task?.status.state === 'TASK_STATE_COMPLETED').length, 20)
  t.equal(getEventListeners(done.signal, 'abort').length, 0, 'the listener is gone once the calls are over')
})

t.test('aborting a stream ends it and releases the subscription on the server', async t => {
  const a2a = client()
  const controller = new AbortController()
  const events = a2a.sendStreamingMessage({ message: userMessage('hold') }, { signal: controller.signal })
  const taskId = (await events.next()).value?.task?.id as string
  t.equal((await events.next()).value?.statusUpdate?.status.state, 'TASK_STATE_WORKING')
  outcomes.length = 0
  const waiting = events.next()
  controller.abort()
  await t.rejects(waiting, { name: 'AbortError' })
  t.same(await events.next(), { value: undefined, done: true })
  await eventually(() => outcomes.includes('SendStreamingMessage cancelled'))
  t.equal((await a2a.getTask({ id: taskId })).status.state, 'TASK_STATE_WORKING', 'the task goes on')
  await a2a.cancelTask({ id: taskId })
})

t.test('leaving a stream loop early releases the subscription too', async t => {
  const a2a = client()
  const taskId = (await a2a.sendMessage({ message: userMessage('hold'), configuration: { returnImmediately: true } })).task!.id
  outcomes.length = 0
  for await (const event of a2a.subscribeToTask({ id: taskId })) {
    t.equal(event.task?.id, taskId)
    break
  }
  await eventually(() => outcomes.includes('SubscribeToTask cancelled'))
  await a2a.cancelTask({ id: taskId })
})

t.test('a timeout gives a call up with CallTimeoutError', async t => {
  const a2a = client({ timeout: 50 })
  const contextId = `timeout-${Date.now()}`
  await t.rejects(a2a.sendMessage({ message: userMessage('hold', { contextId }) }), CallTimeoutError)
  const events = a2a.sendStreamingMessage({ message: userMessage('hold', { contextId }) }, { timeout: 1000 })
  const { task } = (await events.next()).value ?? {}
  t.same([task?.contextId, task?.status.state], [contextId, 'TASK_STATE_SUBMITTED'])
  const { statusUpdate } = (await events.next()).value ?? {}
  t.same([statusUpdate?.taskId, statusUpdate?.status.state], [task?.id, 'TASK_STATE_WORKING'])
  await t.rejects(events.next(), { name: 'CallTimeoutError', timeoutMs: 1000 })
  const cleaner = client()
  for (const task of (await cleaner.listTasks({ contextId })).tasks) await cleaner.cancelTask({ id: task.id })
})

t.test('a stream whose connection is cut mid-way reports it is incomplete', async t => {
  const a2a = client()
  const events = a2a.sendStreamingMessage({ message: userMessage('hold') })
  const taskId = (await events.next()).value?.task?.id as string
  t.equal((await events.next()).value?.statusUpdate?.status.state, 'TASK_STATE_WORKING')
  requests.at(-1)?.raw.socket.destroy()
  const cut = await events.next().catch((error: unknown) => error)
  t.type(cut, StreamIncompleteError)
  t.match(cut, { taskId, received: 2, retryable: true, message: 'the connection dropped after 2 events, before the stream ended' })
  await a2a.cancelTask({ id: taskId })
})

t.test('nothing listening: a retryable ConnectionError', async t => {
  const closed = await startServer()
  const url = closed.endpoint
  await closed.close()
  const error = await new A2AClient(new JsonRpcTransport({ url })).getTask({ id: 'x' }).catch((thrown: unknown) => thrown)
  t.type(error, ConnectionError)
  t.match(error, { retryable: true, message: `could not reach ${url}` })
})

t.test('answers that are not JSON-RPC, through an injected fetch', async t => {
  const answering = (body: string, init: ResponseInit) => client({ fetch: async () => new Response(body, init) })
  t.match(await answering('Bad gateway', { status: 502 }).getTask({ id: 'x' }).catch((e: unknown) => e), {
    name: 'UnexpectedStatusError', status: 502, body: 'Bad gateway', retryable: false
  })
  const gateway = await answering('{"message":"log in first"}', { status: 401, headers: { 'www-authenticate': 'Cookie' } }).getTask({ id: 'x' }).catch((e: unknown) => e)
  t.type(gateway, UnexpectedStatusError)
  t.match(gateway, { status: 401, wwwAuthenticate: 'Cookie', body: { message: 'log in first' }, message: 'the agent answered HTTP 401: log in first' })
  await t.rejects(answering('{"ok":true}', { status: 200 }).getTask({ id: 'x' }), { name: 'InvalidResponseError' })

  const sse = (text: string) => answering(text, { status: 200, headers: { 'content-type': 'text/event-stream' } })
  const failing = sse([
    'data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","status":{"state":"TASK_STATE_WORKING"}}}}',
    '',
    'event: error',
    'data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Stream subscriber fell behind; 3 events dropped","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"STREAM_LAGGED","domain":"a2a-rust.com"}]}}',
    '', ''
  ].join('\n')).subscribeToTask({ id: 't1' })
  t.equal((await failing.next()).value?.task?.id, 't1')
  await t.rejects(failing.next(), { name: 'A2AClientError', code: -32603, reason: 'STREAM_LAGGED', domain: 'a2a-rust.com' }, 'a mid-stream error keeps its code and details')

  const short = sse('data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t2","status":{"state":"TASK_STATE_WORKING"}}}}\n\n').subscribeToTask({ id: 't2' })
  t.same((await short.next()).value, { task: { id: 't2', status: { state: 'TASK_STATE_WORKING' } } })
  await t.rejects(short.next(), { name: 'StreamIncompleteError', taskId: 't2', message: 'the stream ended after 1 events, before the task reached a final state' })
})

t.test('a stream returned before it is read stops its request: the server releases the subscription', async t => {
  const a2a = client()
  const taskId = (await a2a.sendMessage({ message: userMessage('hold'), configuration: { returnImmediately: true } })).task!.id
  outcomes.length = 0
  const seen = requests.length
  const events = a2a.subscribeToTask({ id: taskId })
  // The request goes at once; the server has it before the reader says it wants nothing.
  await eventually(() => requests.length > seen)
  t.same(await events.return!(undefined), { value: undefined, done: true })
  await eventually(() => outcomes.includes('SubscribeToTask cancelled'))
  t.same(await events.next(), { value: undefined, done: true })
  await a2a.cancelTask({ id: taskId })
})

t.test('timeout: Infinity is no timeout (setTimeout would fire it at once)', async t => {
  const answer = await client({ timeout: Infinity }).sendMessage({ message: userMessage('sleep 50') })
  t.equal(answer.task?.status.state, 'TASK_STATE_COMPLETED')
})
