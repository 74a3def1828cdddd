// RestTransport over fetch against a real server: routes under /{tenant}, path segments
// escaped, query strings for the GET methods, abort of a stream releasing the
// subscription, and the `event: error` and cut-short endings of an SSE stream.
import t from 'tap'
import { A2AClient, RestTransport } from '../lib/client/index.js'
import { eventually, startServer, userMessage } from './helpers/server.js'

const outcomes: string[] = []
const server = await startServer({ prefix: '/v1', interceptors: [{ onComplete (context, outcome) { outcomes.push(`${context.method} ${outcome.status}`) } }] })
t.teardown(() => server.close())

const rest = (options: Partial<ConstructorParameters<typeof RestTransport>[0]> = {}) => new RestTransport({ url: server.endpoint, ...options })

t.test('a tenant in the params goes in the path and scopes the call; the client option sets it for every call', async t => {
  const plain = new A2AClient(rest())
  const sent = await plain.sendMessage({ tenant: 'acme', message: userMessage('tenant task') })
  const id = sent.task!.id
  t.equal((await plain.getTask({ tenant: 'acme', id })).id, id)
  await t.rejects(plain.getTask({ id }), { name: 'A2AClientError', reason: 'TASK_NOT_FOUND', httpStatus: 404 })
  const acme = new A2AClient(rest(), { tenant: 'acme' })
  t.equal((await acme.getTask({ id })).id, id)
  t.same((await acme.listTasks({ contextId: sent.task!.contextId })).tasks.map(task => task.id), [id])
  t.equal((await acme.listTasks({})).tasks.every(task => task.id !== undefined), true)
})

t.test('path segments are escaped', async t => {
  const client = new A2AClient(rest())
  await t.rejects(client.getTask({ id: 'a/b c?d' }), { name: 'A2AClientError', reason: 'TASK_NOT_FOUND', metadata: { taskId: 'a/b c?d' } })
  await t.rejects(client.cancelTask({ id: 'x:y' }), { name: 'A2AClientError', reason: 'TASK_NOT_FOUND', metadata: { taskId: 'x:y' } })
})

t.test('"." and ".." fail the call: a URL resolves such a segment away, and the call would reach another path', async t => {
  let requests = 0
  const counting: typeof fetch = (input, init) => { requests++; return fetch(input, init) }
  const client = new A2AClient(rest({ fetch: counting }))
  await t.rejects(client.listTasks({ tenant: '.' }), new TypeError('tenant "." cannot be a path segment over HTTP+JSON'))
  await t.rejects(client.getTask({ id: '..' }), new TypeError('id ".." cannot be a path segment over HTTP+JSON'))
  await t.rejects(client.deleteTaskPushNotificationConfig({ taskId: 't', id: '.' }), new TypeError('id "." cannot be a path segment over HTTP+JSON'))
  await t.rejects(new A2AClient(rest({ fetch: counting }), { tenant: '..' }).getTask({ id: 'x' }), new TypeError('tenant ".." cannot be a path segment over HTTP+JSON'))
  const stream = client.subscribeToTask({ id: '.' })
  await t.rejects(stream.next(), new TypeError('id "." cannot be a path segment over HTTP+JSON'), 'a stream fails from its iterator')
  t.equal(requests, 0, 'nothing was sent')
  // Dots among other characters are a segment like any other.
  await t.rejects(client.getTask({ id: '...' }), { name: 'A2AClientError', reason: 'TASK_NOT_FOUND', metadata: { taskId: '...' } })
})

t.test('GET params travel in the query string: numbers, booleans and enums', async t => {
  const client = new A2AClient(rest())
  const contextId = `query-${Date.now()}`
  await client.sendMessage({ message: userMessage('one', { contextId }) })
  await client.sendMessage({ message: userMessage('fail', { contextId }) })
  const failed = await client.listTasks({ contextId, status: 'TASK_STATE_FAILED', includeArtifacts: false, pageSize: 5 })
  t.same(failed.tasks.map(task => task.status.state), ['TASK_STATE_FAILED'])
  t.equal(failed.pageSize, 5)
  const all = await client.listTasks({ contextId, historyLength: 0 })
  t.equal(all.totalSize, 2)
  t.same(all.tasks.map(task => task.history ?? []), [[], []])
})

t.test('aborting a stream ends it and releases the subscription', async t => {
  const client = new A2AClient(rest())
  const controller = new AbortController()
  const events = client.sendStreamingMessage({ message: userMessage('hold') }, { signal: controller.signal })
  const taskId = (await events.next()).value?.task?.id as string
  t.equal((await events.next()).value?.statusUpdate?.status.state, 'TASK_STATE_WORKING')
  outcomes.length = 0
  controller.abort(new Error('enough'))
  await t.rejects(events.next(), { message: 'enough' })
  await eventually(() => outcomes.includes('SendStreamingMessage cancelled'))
  t.equal((await client.cancelTask({ id: taskId })).status.state, 'TASK_STATE_CANCELED')
})

t.test('SSE endings: an `event: error` is the error its body says; a body that stops early is incomplete', async t => {
  const sse = (text: string) => new A2AClient(rest({ fetch: async () => new Response(text, { headers: { 'content-type': 'text/event-stream' } }) }))
  const failing = sse([
    'data: {"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}',
    '',
    'event: error',
    'data: {"error":{"code":500,"status":"INTERNAL","message":"Internal error"}}',
    '', ''
  ].join('\n')).subscribeToTask({ id: 't1' })
  t.equal((await failing.next()).value?.statusUpdate?.taskId, 't1')
  await t.rejects(failing.next(), { name: 'A2AClientError', code: -32603, httpStatus: 500, message: 'Internal error' })

  const short = sse('data: {"statusUpdate":{"taskId":"t2","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}\n\n').subscribeToTask({ id: 't2' })
  t.same((await short.next()).value, { statusUpdate: { taskId: 't2', contextId: 'c1', status: { state: 'TASK_STATE_WORKING' } } })
  await t.rejects(short.next(), { name: 'StreamIncompleteError', taskId: 't2', received: 1 })

  const waiting = sse('data: {"statusUpdate":{"taskId":"t3","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}\n\n').subscribeToTask({ id: 't3' })
  t.same((await waiting.next()).value, { statusUpdate: { taskId: 't3', contextId: 'c1', status: { state: 'TASK_STATE_INPUT_REQUIRED' } } })
  t.same(await waiting.next(), { value: undefined, done: true }, 'a stream may end where the task waits for input')
})
