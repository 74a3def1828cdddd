// Tenancy (issue 5): a task of tenant A is invisible to tenant B on every method and
// every binding (TaskNotFound, never "forbidden"); tenants come from the REST path, the
// request's tenant field, a header or a resolver; a store that cannot isolate refuses them.
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { MemoryTaskStore, type TaskStore } from '../lib/index.js'
import { normalizeOptions } from '../lib/options.js'
import { post, startServer, userMessage, V1 } from './helpers/server.js'
import { rest, restRequest } from './helpers/rest.js'
import { connect, wsUrl } from './helpers/ws.js'

const server = await startServer()
t.teardown(() => server.close())

/** The reason of a call's error (or 'ok'), over a binding, for a tenant. */
const bindings = {
  async JSONRPC (method: string, params: Record<string, unknown>) {
    const { body } = await post(server.endpoint, { jsonrpc: '2.0', id: 1, method, params })
    if (body?.result !== undefined) return { ok: body.result }
    return body.error.data?.[0]?.reason ?? body.error.code
  },
  async 'HTTP+JSON' (method: string, params: Record<string, unknown>) {
    const request = restRequest(method, params)
    const reply = await rest(server.endpoint, request.method, request.path, request.body === undefined ? {} : { body: request.body })
    if (reply.status === 200) return { ok: reply.body }
    return reply.body.error.details?.[0]?.reason ?? reply.status
  },
  async WEBSOCKET (method: string, params: Record<string, unknown>) {
    const client = await connect(wsUrl(server.origin))
    try {
      const frame = method === 'SubscribeToTask' || method === 'SendStreamingMessage'
        ? (await client.stream(method, params))[0]
        : await client.request(method, params)
      if (frame.result !== undefined) return { ok: frame.result }
      return frame.error.data?.[0]?.reason ?? frame.error.code
    } finally {
      client.close()
    }
  }
}

t.test('a task created in tenant A is invisible to B and to the default tenant, on every method and binding', async t => {
  for (const [creator, create] of Object.entries(bindings)) {
    const created = await create('SendMessage', { tenant: 'tenant-a', message: userMessage('input') }) as { ok: any }
    const taskId = created.ok.task.id
    t.equal((await create('CreateTaskPushNotificationConfig', { tenant: 'tenant-a', taskId, id: 'cfg', url: 'https://hooks.example.com/x' }) as any).ok.id, 'cfg')
    t.equal((await create('GetTask', { tenant: 'tenant-a', id: taskId }) as any).ok.id, taskId, `${creator}: the owner sees it`)
    for (const [prober, probe] of Object.entries(bindings)) {
      for (const tenant of ['tenant-b', undefined]) {
        const scope = tenant === undefined ? {} : { tenant }
        const label = `${creator} task probed over ${prober} as ${tenant ?? 'the default tenant'}`
        for (const [method, params] of [
          ['GetTask', { id: taskId }],
          ['CancelTask', { id: taskId }],
          ['SubscribeToTask', { id: taskId }],
          ['SendMessage', { message: userMessage('answer', { taskId }) }],
          ['SendStreamingMessage', { message: userMessage('answer', { taskId }) }],
          ['CreateTaskPushNotificationConfig', { taskId, url: 'https://hooks.example.com/y' }],
          ['GetTaskPushNotificationConfig', { taskId, id: 'cfg' }],
          ['ListTaskPushNotificationConfigs', { taskId }],
          ['DeleteTaskPushNotificationConfig', { taskId, id: 'cfg' }]
        ] as const) {
          t.equal(await probe(method, { ...scope, ...params }), 'TASK_NOT_FOUND', `${label}: ${method}`)
        }
        const listed = await probe('ListTasks', { ...scope, pageSize: 100 }) as { ok: any }
        t.notOk(listed.ok.tasks.some((task: any) => task.id === taskId), `${label}: ListTasks`)
      }
    }
    t.equal((await create('GetTask', { tenant: 'tenant-a', id: taskId }) as any).ok.status.state, 'TASK_STATE_INPUT_REQUIRED', 'untouched by the probes')
    t.equal((await create('GetTaskPushNotificationConfig', { tenant: 'tenant-a', taskId, id: 'cfg' }) as any).ok.id, 'cfg')
  }
})

t.test('the REST path wins over a body tenant', async t => {
  const reply = await rest(server.endpoint, 'POST', '/path-tenant/message:send', { body: { tenant: 'body-tenant', message: userMessage('x') } })
  const taskId = reply.body.task.id
  t.equal((await rest(server.endpoint, 'GET', `/path-tenant/tasks/${taskId}`)).status, 200)
  t.equal((await rest(server.endpoint, 'GET', `/body-tenant/tasks/${taskId}`)).status, 404)
})

t.test('a tenant header, and a resolver that wins over everything', async t => {
  const byHeader = await startServer({ tenancy: { header: 'X-Tenant' } })
  t.teardown(() => byHeader.close())
  const { body } = await post(byHeader.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('x') } }, { ...V1, 'x-tenant': 'from-header' })
  t.equal((await byHeader.fastify.a2a.taskStore.get(body.result.task.id, { tenant: 'from-header' }))?.id, body.result.task.id)

  const resolved = await startServer({ tenancy: { resolve: (context) => `org-${context.serviceParams['x-org'] ?? 'none'}` } })
  t.teardown(() => resolved.close())
  const sent = await rest(resolved.endpoint, 'POST', '/ignored/message:send', { body: { message: userMessage('x') }, headers: { ...V1, 'content-type': 'application/json', 'x-org': '42' } })
  t.equal((await resolved.fastify.a2a.taskStore.get(sent.body.task.id, { tenant: 'org-42' }))?.id, sent.body.task.id)
})

t.test('a tenant header goes over the request\'s tenant field on every binding, not over the REST path', async t => {
  const byHeader = await startServer({ tenancy: { header: 'x-tenant' } })
  t.teardown(() => byHeader.close())
  const store = byHeader.fastify.a2a.taskStore
  const tenantOf = async (id: string) => (await Promise.all(['from-header', 'named', 'path'].map(async tenant => await store.get(id, { tenant }) === undefined ? [] : [tenant]))).flat()
  const headers = { ...V1, 'x-tenant': 'from-header' }
  const message = userMessage('x')
  const viaRpc = await post(byHeader.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { tenant: 'named', message } }, headers)
  t.same(await tenantOf(viaRpc.body.result.task.id), ['from-header'], 'JSON-RPC')
  const restHeaders = { ...headers, 'content-type': 'application/json' }
  const viaBody = await rest(byHeader.endpoint, 'POST', '/message:send', { body: { tenant: 'named', message }, headers: restHeaders })
  t.same(await tenantOf(viaBody.body.task.id), ['from-header'], 'HTTP+JSON body')
  const viaPath = await rest(byHeader.endpoint, 'POST', '/path/message:send', { body: { tenant: 'named', message }, headers: restHeaders })
  t.same(await tenantOf(viaPath.body.task.id), ['path'], 'HTTP+JSON path')
  const client = await connect(wsUrl(byHeader.origin), { headers: { 'x-tenant': 'from-header' } })
  t.teardown(() => client.close())
  t.same(await tenantOf((await client.request('SendMessage', { tenant: 'named', message })).result.task.id), ['from-header'], 'WebSocket')
})

t.test('bad tenancy options fail registration, naming the option', async t => {
  const options = (tenancy: unknown) => normalizeOptions({ executor: conformanceAgent, card: conformanceCard, tenancy: tenancy as never })
  const refusals: Array<[unknown, string]> = [
    [null, 'tenancy: must be an object'],
    [{ header: 'bad header' }, 'tenancy.header: must be a header name'],
    [{ header: '' }, 'tenancy.header: must be a header name'],
    [{ resolve: 'x' }, 'tenancy.resolve: must be a function']
  ]
  for (const [tenancy, message] of refusals) {
    t.throws(() => options(tenancy), { code: 'A2A_ERR_INVALID_OPTION', message: `Invalid option ${message}` }, message)
  }
})

t.test('a resolver\'s answer is final: \'\' pins the default tenant over the path, header and request', async t => {
  const pinned = await startServer({ tenancy: { header: 'x-tenant', resolve: (context) => context.serviceParams['x-org'] ?? '' } })
  t.teardown(() => pinned.close())
  const store = pinned.fastify.a2a.taskStore
  const inTenant = async (id: string, tenant: string) => await store.get(id, { tenant }) !== undefined
  const headers = { ...V1, 'x-tenant': 'victim' }

  const viaRpc = await post(pinned.endpoint, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { tenant: 'victim', message: userMessage('x') } }, headers)
  const rpcTask = viaRpc.body.result.task.id
  t.same([await inTenant(rpcTask, ''), await inTenant(rpcTask, 'victim')], [true, false], 'JSON-RPC: the default tenant')

  const viaRest = await rest(pinned.endpoint, 'POST', '/victim/message:send', { body: { tenant: 'victim', message: userMessage('x') }, headers: { ...headers, 'content-type': 'application/json' } })
  const restTask = viaRest.body.task.id
  t.same([await inTenant(restTask, ''), await inTenant(restTask, 'victim')], [true, false], 'HTTP+JSON: the default tenant')

  const client = await connect(wsUrl(pinned.origin), { headers: { 'x-tenant': 'victim' } })
  t.teardown(() => client.close())
  const wsTask = (await client.request('SendMessage', { tenant: 'victim', message: userMessage('x') })).result.task.id
  t.same([await inTenant(wsTask, ''), await inTenant(wsTask, 'victim')], [true, false], 'WebSocket: the default tenant')

  const org = await post(pinned.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { tenant: 'victim', id: rpcTask } }, { ...headers, 'x-org': 'org-1' })
  t.equal(org.body.error.code, -32001, 'a caller the resolver puts in another tenant cannot see it')
})

t.test('the README\'s per-caller tenancy: each bearer token sees its own tasks only, whatever tenant it names', async t => {
  const perCaller = await startServer({
    auth: { bearer: { tokens: ['alice-token', 'bob-token'] } },
    tenancy: { resolve: (context) => (context.identity as { subject?: string } | undefined)?.subject ?? '' }
  })
  t.teardown(() => perCaller.close())
  const as = (token: string) => ({ ...V1, authorization: `Bearer ${token}` })
  const rpc = async (token: string, method: string, params: object) =>
    (await post(perCaller.endpoint, { jsonrpc: '2.0', id: 1, method, params }, as(token))).body
  const task = (await rpc('alice-token', 'SendMessage', { message: userMessage('input') })).result.task
  t.equal((await rpc('alice-token', 'GetTask', { id: task.id })).result.id, task.id, 'alice sees her task')
  t.equal((await rpc('bob-token', 'GetTask', { id: task.id })).error.code, -32001, 'bob gets TaskNotFound')
  t.equal((await rpc('bob-token', 'GetTask', { id: task.id, tenant: '' })).error.code, -32001, 'naming the default tenant does not help')
  t.same((await rpc('bob-token', 'ListTasks', {})).result.tasks, [], 'bob lists none of hers')
  t.equal((await rpc('bob-token', 'CancelTask', { id: task.id })).error.code, -32001)
  t.equal((await rest(perCaller.endpoint, 'GET', `/tasks/${task.id}`, { headers: as('bob-token') })).status, 404, 'HTTP+JSON too')
  const bob = await connect(wsUrl(perCaller.origin), { headers: { authorization: 'Bearer bob-token' } })
  t.teardown(() => bob.close())
  t.equal((await bob.request('GetTask', { id: task.id })).error.code, -32001, 'WebSocket too')
  t.equal((await rpc('alice-token', 'GetTask', { id: task.id })).result.status.state, 'TASK_STATE_INPUT_REQUIRED', 'her task is untouched')
})

t.test('a store that cannot isolate tenants refuses a request naming one', async t => {
  const inner = new MemoryTaskStore()
  const shared: TaskStore = {
    create: (task, scope) => inner.create(task, scope),
    get: (id, scope) => inner.get(id, scope),
    update: (id, change, scope) => inner.update(id, change, scope),
    list: (query, scope) => inner.list(query, scope)
  }
  const refusing = await startServer({ taskStore: shared })
  t.teardown(() => refusing.close())
  const { body } = await post(refusing.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { tenant: 't1', id: 'x' } })
  t.same(body.error, {
    code: -32004,
    message: 'Unsupported operation: tenant "t1": this server\'s stores cannot keep tenants apart',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org' }]
  })
  t.equal((await rest(refusing.endpoint, 'GET', '/t1/tasks/x')).body.error.details[0].reason, 'UNSUPPORTED_OPERATION')
  const plain = await post(refusing.endpoint, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } })
  t.equal(plain.body.error.code, -32001, 'no tenant: served')
})
