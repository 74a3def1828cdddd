// The interceptor chain (issue 5): one definition on every binding and every WebSocket
// frame; it refuses, enriches, and sees each call's outcome exactly once, also when the
// client leaves mid-stream.
import http from 'node:http'
import Fastify from 'fastify'
import t from 'tap'
import { a2aWebSocket, PermissionDeniedError, type A2AInterceptor, type CallOutcome } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { logLines } from './helpers/logs.js'
import { eventually, post, startServer, userMessage, V1 } from './helpers/server.js'
import { rest } from './helpers/rest.js'
import { connect, wsUrl } from './helpers/ws.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'

interface Seen { binding: string, method: string, outcome?: CallOutcome['status'], reason?: string }

function recorder () {
  const calls: Seen[] = []
  const interceptor: A2AInterceptor = {
    before (context) { calls.push({ binding: context.binding, method: context.method }) },
    onComplete (context, outcome) {
      const call = calls.find(c => c.method === context.method && c.binding === context.binding && c.outcome === undefined)
      if (call === undefined) throw new Error('onComplete without before, or twice')
      call.outcome = outcome.status
      if (outcome.status === 'failed') call.reason = outcome.error.code
    }
  }
  return { calls, interceptor }
}

t.test('one interceptor sees every call on every binding, with its outcome', async t => {
  const { calls, interceptor } = recorder()
  const server = await startServer({ interceptors: [interceptor] })
  t.teardown(() => server.close())
  await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x') } })
  await rest(server.endpoint, 'GET', '/tasks/missing')
  const ws = await connect(wsUrl(server.origin))
  await ws.stream('SendStreamingMessage', { message: userMessage('stream 2') })
  await ws.request('GetTask', { id: 'x' })
  ws.close()
  await eventually(() => calls.length === 4 && calls.every(c => c.outcome !== undefined))
  t.same(calls, [
    { binding: 'JSONRPC', method: 'SendMessage', outcome: 'succeeded' },
    { binding: 'HTTP+JSON', method: 'GetTask', outcome: 'failed', reason: 'A2A_ERR_TASK_NOT_FOUND' },
    { binding: 'https://a2a-rust.com/bindings/websocket/v1', method: 'SendStreamingMessage', outcome: 'succeeded' },
    { binding: 'https://a2a-rust.com/bindings/websocket/v1', method: 'GetTask', outcome: 'failed', reason: 'A2A_ERR_TASK_NOT_FOUND' }
  ])
})

t.test('an interceptor that throws what is not an Error fails the call with the binding\'s internal error', async t => {
  const server = await startServer({ interceptors: [{ before () { throw 'not an Error' } }] }) // eslint-disable-line no-throw-literal
  t.teardown(() => server.close())
  const rpcReply = await post(server.endpoint, { jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: 'x' } })
  t.equal(rpcReply.status, 200)
  t.same(rpcReply.body, { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'Internal error' } })
  const restReply = await rest(server.endpoint, 'GET', '/tasks/x')
  t.equal(restReply.status, 500)
  t.same(restReply.body, { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } })
  t.equal((await rest(server.endpoint, 'GET', '/tasks/x')).status, 500, 'and the server goes on serving')
})

t.test('onComplete runs once with "cancelled" when the client drops mid-stream (SSE and WebSocket)', async t => {
  const { calls, interceptor } = recorder()
  const server = await startServer({ interceptors: [interceptor] })
  t.teardown(() => server.close())
  await new Promise<void>((resolve, reject) => {
    const request = http.request(server.endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...V1 } }, (response) => {
      response.once('data', () => { request.destroy(); resolve() })
    })
    request.on('error', () => {})
    request.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: userMessage('hold') } }))
    setTimeout(() => reject(new Error('no event')), 3000)
  })
  const ws = await connect(wsUrl(server.origin))
  ws.send({ jsonrpc: '2.0', id: 'h', method: 'SendStreamingMessage', params: { message: userMessage('hold') } })
  await ws.next()
  ws.socket.terminate()
  await eventually(() => calls.length === 2 && calls.every(c => c.outcome !== undefined))
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same(calls.map(c => [c.binding, c.outcome]), [['JSONRPC', 'cancelled'], ['https://a2a-rust.com/bindings/websocket/v1', 'cancelled']])
  const tasks = await server.fastify.a2a.taskStore.list({ pageSize: 10, status: 'TASK_STATE_WORKING' }, { tenant: '' })
  t.equal(tasks.totalSize, 2, 'the tasks go on')
  for (const task of tasks.tasks) await server.fastify.a2a.handler.cancelTask({ id: task.id }, { binding: 'test', method: 'CancelTask', serviceParams: {}, tenant: '', extensions: [] })
})

t.test('a refusal from one interceptor is the call\'s answer; the next ones do not run; all complete', async t => {
  const order: string[] = []
  const first: A2AInterceptor = { before () { order.push('first') }, onComplete (_c, outcome) { order.push(`first:${outcome.status}`) } }
  const refusing: A2AInterceptor = { before (context) { order.push('refusing'); if (context.method === 'CancelTask') throw new PermissionDeniedError() } }
  const last: A2AInterceptor = { before () { order.push('last') } }
  const server = await startServer({ interceptors: [first, refusing, last] })
  t.teardown(() => server.close())
  const reply = await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: 'x' } })
  t.equal(reply.status, 403)
  t.equal(reply.body.error.data.at(-1).reason, 'PERMISSION_DENIED')
  await eventually(() => order.length === 3)
  t.same(order, ['first', 'refusing', 'first:failed'])
})

t.test('enrichment: identity, scopes and tenant set by an interceptor reach the executor', async t => {
  let seen: any
  const server = await startServer({
    interceptors: [{ before (context) { context.identity = { subject: 'zed' }; context.scopes = ['a']; context.tenant = 'acme' } }],
    executor: { async execute (context, events) { seen = { identity: context.identity, tenant: context.tenant }; await events.completed() } }
  })
  t.teardown(() => server.close())
  const { body } = await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x') } })
  t.same(seen, { identity: { subject: 'zed' }, tenant: 'acme' })
  const taskId = body.result.task.id
  t.equal((await server.fastify.a2a.taskStore.get(taskId, { tenant: 'acme' }))?.id, taskId, 'stored in that tenant')
  t.equal(await server.fastify.a2a.taskStore.get(taskId, { tenant: '' }), undefined)
})

const SEED_WS = 'https://a2a-rust.com/bindings/websocket/v1'

t.test('an interceptor sees the tenant the call names, on every binding and both WebSocket dialects', async t => {
  const seen: string[] = []
  const server = await startServer({ interceptors: [{ before (context) { seen.push(`${context.binding} ${JSON.stringify(context.tenant)}`) } }] })
  t.teardown(() => server.close())
  await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { tenant: 'acme', id: 'x' } })
  await post(server.endpoint, { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'x' } })
  await rest(server.endpoint, 'GET', '/acme/tasks/x')
  await rest(server.endpoint, 'GET', '/tasks/x?tenant=acme')
  const seed = await connect(wsUrl(server.origin))
  t.teardown(() => seed.close())
  await seed.request('GetTask', { tenant: 'acme', id: 'x' })
  const v1 = await connectV1(v1Url(server.origin))
  t.teardown(() => v1.close())
  await v1.request('g', 'GetTask', { tenant: 'acme', id: 'x' })
  t.same(seen, ['JSONRPC "acme"', 'JSONRPC ""', 'HTTP+JSON "acme"', 'HTTP+JSON "acme"', `${SEED_WS} "acme"`, 'WEBSOCKET "acme"'])
})

t.test('an interceptor refusing a tenant refuses it on every binding with the same error, and nothing is stored there', async t => {
  const server = await startServer({ interceptors: [{ before (context) { if (context.tenant === 'admin') throw new PermissionDeniedError() } }] })
  t.teardown(() => server.close())
  const message = userMessage('x')
  const rpcReply = await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { tenant: 'admin', message } })
  t.equal(rpcReply.status, 403)
  const error = { code: -32600, message: 'permission denied', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PERMISSION_DENIED', domain: 'a2a-rust.com' }] }
  t.same(rpcReply.body, { jsonrpc: '2.0', id: 1, error }, 'JSON-RPC')
  const restReply = await rest(server.endpoint, 'POST', '/admin/message:send', { body: { message } })
  t.equal(restReply.status, 403)
  t.same(restReply.body, { error: { code: 403, status: 'PERMISSION_DENIED', message: 'permission denied', details: error.data } }, 'HTTP+JSON')
  const seed = await connect(wsUrl(server.origin))
  t.teardown(() => seed.close())
  t.same(await seed.request('SendMessage', { tenant: 'admin', message }, 1), { jsonrpc: '2.0', id: 1, error }, 'WebSocket')
  const v1 = await connectV1(v1Url(server.origin))
  t.teardown(() => v1.close())
  t.same(await v1.request('s', 'SendMessage', { tenant: 'admin', message }), { jsonrpc: '2.0', id: 's', error }, 'WebSocket a2a.v1')
  t.equal((await server.fastify.a2a.taskStore.list({ pageSize: 10 }, { tenant: 'admin' })).totalSize, 0)
})

t.test('an interceptor pinning the default tenant is not overridden by the tenant the call names', async t => {
  const server = await startServer({ interceptors: [{ before (context) { context.tenant = context.serviceParams['x-org'] ?? '' } }] })
  t.teardown(() => server.close())
  const message = userMessage('x')
  const ids = [
    (await post(server.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { tenant: 'victim-org', message } })).body.result.task.id,
    (await rest(server.endpoint, 'POST', '/victim-org/message:send', { body: { message } })).body.task.id,
    (await rest(server.endpoint, 'POST', '/message:send', { body: { tenant: 'victim-org', message } })).body.task.id
  ]
  const seed = await connect(wsUrl(server.origin))
  t.teardown(() => seed.close())
  ids.push((await seed.request('SendMessage', { tenant: 'victim-org', message })).result.task.id)
  const v1 = await connectV1(v1Url(server.origin))
  t.teardown(() => v1.close())
  ids.push((await v1.request('s', 'SendMessage', { tenant: 'victim-org', message })).result.task.id)
  const store = server.fastify.a2a.taskStore
  t.same((await store.list({ pageSize: 10 }, { tenant: '' })).tasks.map(task => task.id).sort(), [...ids].sort(), 'JSON-RPC, HTTP+JSON (path and body), WebSocket, a2a.v1: all in the default tenant')
  t.equal((await store.list({ pageSize: 10 }, { tenant: 'victim-org' })).totalSize, 0, 'none in the tenant named')
})

t.test('fastify.a2a.addInterceptor adds to the chain of every binding; ordinary Fastify hooks run too', async t => {
  const fastify = Fastify()
  const hooks: string[] = []
  fastify.addHook('onRequest', async (request) => { hooks.push(`hook ${request.method} ${request.url.split('?')[0]}`) })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  const methods: string[] = []
  fastify.a2a.addInterceptor({ before (context) { methods.push(context.method) } })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const origin = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
  await post(origin, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } })
  const ws = await connect(wsUrl(origin))
  await ws.request('ListTasks', {})
  ws.close()
  t.same(methods, ['GetTask', 'ListTasks'])
  t.same(hooks, ['hook POST /', 'hook GET /'], 'the user\'s hook ran for the JSON-RPC request and for the upgrade')
  t.throws(() => fastify.a2a.addInterceptor({ before: 'nope' } as any), { code: 'A2A_ERR_INVALID_OPTION' })
})

/** An Error carrying an HTTP status, as Fastify's own, @fastify/error's and @fastify/sensible's do. */
const withStatus = (message: string, statusCode: number) => Object.assign(new Error(message), { statusCode })

t.test('an application hook refusing with a 4xx statusCode is the binding\'s refusal for that status, not an internal error', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'info', stream } })
  fastify.addHook('onRequest', async (request, reply) => {
    switch (request.headers['x-refuse']) {
      case '429': reply.header('retry-after', '30'); throw withStatus('slow down', 429)
      case '401': reply.header('www-authenticate', 'Bearer realm="app"'); throw withStatus('sign in first', 401)
      case '403': throw withStatus('not for you', 403)
      case '409': throw withStatus('try later', 409)
    }
  })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  t.teardown(() => fastify.close())
  const rpcAnswer = async (refuse: string) => {
    const reply = await fastify.inject({ method: 'POST', url: '/', headers: { ...V1, 'content-type': 'application/json', 'x-refuse': refuse }, payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }) })
    return { status: reply.statusCode, retryAfter: reply.headers['retry-after'], challenge: reply.headers['www-authenticate'], body: reply.json() }
  }
  const restAnswer = async (refuse: string) => {
    const reply = await fastify.inject({ method: 'GET', url: '/tasks/x', headers: { ...V1, 'x-refuse': refuse } })
    return { status: reply.statusCode, body: reply.json() }
  }
  const retryInfo = { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '30s' }
  const unauthenticated = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': 'Bearer realm="app"' } }
  const denied = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PERMISSION_DENIED', domain: 'a2a-rust.com' }

  t.same(await rpcAnswer('429'), { status: 429, retryAfter: '30', challenge: undefined, body: { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'slow down', data: [retryInfo] } } }, 'JSON-RPC: 429, RateLimited with the RetryInfo of the Retry-After')
  t.same(await restAnswer('429'), { status: 429, body: { error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'slow down', details: [retryInfo] } } }, 'REST: 429 RESOURCE_EXHAUSTED')
  t.same(await rpcAnswer('401'), { status: 401, retryAfter: undefined, challenge: 'Bearer realm="app"', body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'sign in first', data: [unauthenticated] } } }, 'JSON-RPC: 401, Unauthenticated with the challenge')
  t.same(await restAnswer('401'), { status: 401, body: { error: { code: 401, status: 'UNAUTHENTICATED', message: 'sign in first', details: [unauthenticated] } } }, 'REST: 401 UNAUTHENTICATED')
  t.same(await rpcAnswer('403'), { status: 403, retryAfter: undefined, challenge: undefined, body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'not for you', data: [denied] } } }, 'JSON-RPC: 403, PermissionDenied')
  t.same(await restAnswer('403'), { status: 403, body: { error: { code: 403, status: 'PERMISSION_DENIED', message: 'not for you', details: [denied] } } }, 'REST: 403 PERMISSION_DENIED')
  t.same(await rpcAnswer('409'), { status: 200, retryAfter: undefined, challenge: undefined, body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'try later' } } }, 'JSON-RPC: another 4xx is InvalidRequest, in an HTTP 200')
  t.same(await restAnswer('409'), { status: 400, body: { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'try later' } } }, 'REST: another 4xx is 400 INVALID_ARGUMENT')
  t.same(lines.map(line => JSON.parse(line)).filter(line => line.level >= 50), [], 'no refusal is logged as an error')
})

t.test('a 5xx from an application hook stays an internal error; a 4xx statusCode an interceptor throws is no refusal, alike on every binding', async t => {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'info', stream } })
  fastify.addHook('onRequest', async (request) => { if (request.headers['x-fail'] !== undefined) throw withStatus('hook broke', 503) })
  // A downstream service's 401, say: the agent's failure, not the caller's refusal (interceptors refuse with A2A errors).
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, interceptors: [{ before () { throw withStatus('upstream said 401', 401) } }] })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const origin = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
  const internal = { code: -32603, message: 'Internal error' }
  const hookFailed = await post(origin, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { ...V1, 'x-fail': '1' })
  t.same({ status: hookFailed.status, body: hookFailed.body }, { status: 200, body: { jsonrpc: '2.0', id: null, error: internal } })
  const restHookFailed = await rest(origin, 'GET', '/tasks/x', { headers: { ...V1, 'x-fail': '1' } })
  t.same({ status: restHookFailed.status, body: restHookFailed.body }, { status: 500, body: { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } } })

  const rpcReply = await post(origin, { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'x' } })
  t.same({ status: rpcReply.status, body: rpcReply.body }, { status: 200, body: { jsonrpc: '2.0', id: 2, error: internal } }, 'JSON-RPC')
  const restReply = await rest(origin, 'GET', '/tasks/x')
  t.same({ status: restReply.status, body: restReply.body }, { status: 500, body: { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } } }, 'REST')
  const ws = await connect(wsUrl(origin))
  t.teardown(() => ws.close())
  t.same(await ws.request('GetTask', { id: 'x' }, 3), { jsonrpc: '2.0', id: 3, error: internal }, 'WebSocket')
  t.same(lines.map(line => JSON.parse(line)).filter(line => line.level >= 50).map(line => [line.msg, line.err.message]), [
    ['A2A call failed', 'hook broke'], ['A2A call failed', 'hook broke'],
    ['A2A call failed', 'upstream said 401'], ['A2A call failed', 'upstream said 401'], ['A2A call failed', 'upstream said 401']
  ], 'each logged with its cause')
})
