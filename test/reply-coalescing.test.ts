// `coalesceReplies`: the JSON-RPC and HTTP+JSON answers of one turn of the event loop are
// written in its check phase, after the I/O callbacks that read the requests. Observed on
// the server: a root preHandler schedules an immediate for every request, and the moment
// the response head is written is recorded. Coalesced, the write comes after that
// immediate; not coalesced, the whole call runs in the request's own callback and the
// write comes first. The listeners on the response are counted at the same moment, and
// `/plain` is a route of the application that answers at once, to count them against.
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { a2aWebSocket, type A2APluginOptions } from '../lib/index.js'
import { atEndOfTurn } from '../lib/dispatcher/coalesce.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { post, userMessage, V1 } from './helpers/server.js'

async function orderServer (t: Test, options: Partial<A2APluginOptions> = {}) {
  const marks: string[] = []
  /** Listeners on each response as its head is written, by URL. */
  const listeners = new Map<string, number>()
  const fastify = Fastify()
  fastify.addHook('onRequest', async (request, reply) => {
    const writeHead = reply.raw.writeHead.bind(reply.raw) as (...args: unknown[]) => typeof reply.raw
    reply.raw.writeHead = ((...args: unknown[]) => {
      marks.push(`write ${request.url}`)
      listeners.set(request.url, reply.raw.listenerCount('finish') + reply.raw.listenerCount('close') + reply.raw.listenerCount('error'))
      return writeHead(...args)
    }) as typeof reply.raw.writeHead
  })
  fastify.addHook('preHandler', async (request) => {
    setImmediate(() => marks.push(`immediate ${request.url}`))
  })
  fastify.post('/plain', (_request, reply) => { reply.send({ ok: true }) })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, ...options })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const address = fastify.server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  return { origin, marks, listeners }
}

const rpc = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: 1, method, params })

t.test('by default every answer of both HTTP bindings is written after the turn that read its request', async t => {
  const { origin, marks } = await orderServer(t)

  const sent = await post(origin + '/', rpc('SendMessage', { message: userMessage('hello') }))
  t.equal(sent.body.result.task.status.state, 'TASK_STATE_COMPLETED')
  const notFound = await post(origin + '/', rpc('GetTask', { id: 'no-such-task' }))
  t.equal(notFound.body.error.code, -32001, 'an error answer')
  const badJson = await post(origin + '/', '{"jsonrpc"')
  t.equal(badJson.body.error.code, -32700, 'a parse error answered by the route')
  const rest = await post(origin + '/message:send', { message: userMessage('hello') })
  t.equal(rest.body.task.status.state, 'TASK_STATE_COMPLETED')
  const restMissing = await fetch(origin + '/tasks/no-such-task', { headers: V1 })
  t.equal(restMissing.status, 404, 'an HTTP+JSON error answer')

  t.same(marks, [
    'immediate /', 'write /',
    'immediate /', 'write /',
    'immediate /', 'write /',
    'immediate /message:send', 'write /message:send',
    'immediate /tasks/no-such-task', 'write /tasks/no-such-task'
  ])
})

t.test('coalesceReplies: false writes each answer within the callback that read its request', async t => {
  const { origin, marks } = await orderServer(t, { coalesceReplies: false })

  t.equal((await post(origin + '/', rpc('SendMessage', { message: userMessage('hello') }))).body.result.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal((await post(origin + '/message:send', { message: userMessage('hello') })).body.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal((await fetch(origin + '/tasks/no-such-task', { headers: V1 })).status, 404)

  t.same(marks, [
    'write /', 'immediate /',
    'write /message:send', 'immediate /message:send',
    'write /tasks/no-such-task', 'immediate /tasks/no-such-task'
  ])
})

t.test('an answer held for the end of the turn puts no listener of its own on the response', async t => {
  // Handed to Fastify as a resolved reply (a thenable), a held answer would make Fastify
  // listen for the response's end on every request (Reply.then).
  const { origin, listeners } = await orderServer(t)

  t.same((await post(origin + '/plain', {})).body, { ok: true })
  t.equal((await post(origin + '/', rpc('SendMessage', { message: userMessage('hello') }))).body.result.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal((await post(origin + '/', '{"jsonrpc"')).body.error.code, -32700)
  t.equal((await post(origin + '/message:send', { message: userMessage('hello') })).body.task.status.state, 'TASK_STATE_COMPLETED')
  t.equal((await fetch(origin + '/tasks/no-such-task', { headers: V1 })).status, 404)
  t.equal((await fetch(origin + '/tasks', { method: 'DELETE', headers: V1 })).status, 404, 'a path of the binding, another method')

  const baseline = listeners.get('/plain') as number
  t.ok(baseline > 0, 'Fastify listens for the end of every response')
  t.same(Object.fromEntries(listeners), {
    '/plain': baseline, '/': baseline, '/message:send': baseline, '/tasks/no-such-task': baseline, '/tasks': baseline
  })
})

t.test('an SSE stream, hijacked, does not pass through the hook and arrives whole', async t => {
  const { origin } = await orderServer(t)
  const response = await fetch(origin + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...V1 },
    body: JSON.stringify(rpc('SendStreamingMessage', { message: userMessage('stream 3') }))
  })
  t.match(response.headers.get('content-type'), /^text\/event-stream/)
  const events = (await response.text()).split('\n\n').filter(block => block.startsWith('data: ')).map(block => JSON.parse(block.slice(6)))
  // The task, working, three chunks and completed.
  t.equal(events.length, 6)
  t.equal(events.at(-1).result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
})

t.test('the answers of one turn are released together, in order, in its check phase; the next turn gets its own', async t => {
  const order: string[] = []
  setImmediate(() => order.push('queued before'))
  atEndOfTurn(() => order.push('first'))
  atEndOfTurn(() => order.push('second'))
  setImmediate(() => order.push('queued after'))
  await new Promise(resolve => setImmediate(resolve))
  t.same(order, ['queued before', 'first', 'second', 'queued after'], 'one immediate for the turn, in its place among the immediates')
  order.length = 0
  atEndOfTurn(() => order.push('next turn'))
  t.same(order, [], 'not before its own check phase')
  await new Promise(resolve => setImmediate(resolve))
  t.same(order, ['next turn'])
})

t.test('a held callback that throws does not hold back the ones after it; its error is still uncaught', async t => {
  // tap's own handler would fail the test on the uncaught error: it is set aside meanwhile.
  const taps = process.rawListeners('uncaughtException') as Array<(error: Error) => void>
  process.removeAllListeners('uncaughtException')
  t.teardown(() => { for (const listener of taps) process.on('uncaughtException', listener) })
  const uncaught = new Promise<unknown>(resolve => process.once('uncaughtException', resolve))
  const order: string[] = []
  atEndOfTurn(() => order.push('first'))
  atEndOfTurn(() => { throw new Error('a broken write') })
  atEndOfTurn(() => order.push('third'))
  t.match(await uncaught, { message: 'a broken write' })
  t.same(order, ['first', 'third'])
})

t.test('coalesceReplies must be a boolean', async t => {
  const fastify = Fastify()
  await t.rejects(async () => {
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, coalesceReplies: 'yes' as unknown as boolean })
    await fastify.ready()
  }, { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option coalesceReplies: must be a boolean' })
})

t.test('an answer whose head Node refuses to write gets the binding\'s 500, and the server serves on', async t => {
  const fastify = Fastify({ logger: false })
  // A user's hook setting a header value Node refuses: the write fails in the check phase.
  fastify.addHook('onSend', async (request, reply) => {
    if (request.headers['x-break'] !== undefined) reply.header('x-broken', 'a\r\nb')
  })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const address = fastify.server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const rpcAnswer = await post(origin, rpc('GetTask', { id: 'x' }), { ...V1, 'x-break': '1' })
  t.equal(rpcAnswer.status, 500)
  t.equal(rpcAnswer.headers.get('content-type'), 'application/json; charset=utf-8')
  t.same(rpcAnswer.body, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } })
  const rest = await fetch(`${origin}/tasks/x`, { headers: { ...V1, 'x-break': '1' } })
  t.equal(rest.status, 500)
  t.equal(rest.headers.get('content-type'), 'application/a2a+json; charset=utf-8', 'the binding\'s media type')
  t.same(await rest.json(), { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } })
  t.equal((await post(origin, rpc('GetTask', { id: 'x' }))).body.error.code, -32001, 'the next call is served')
})
