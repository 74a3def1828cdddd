// What the stores key on (task and config ids, contextId, messageId, tenant) is checked at
// the request: at most 256 characters, no NUL, no lone surrogate. PostgreSQL's text holds
// neither of those characters (NUL fails the query; a lone surrogate is stored as U+FFFD, so
// two tenants would become one) and its indexes refuse long rows: every store is held to it.
import t from 'tap'
import { openPostgresStores } from '../lib/index.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { rest } from './helpers/rest.js'
import { post, startServer, userMessage, V1 } from './helpers/server.js'
import { connect, wsUrl } from './helpers/ws.js'

const url = await requirePostgres(t)
if (url !== undefined) {
  const schema = uniqueSchema('keys')
  const stores = await openPostgresStores({ connectionString: url, schema })
  const server = await startServer({ taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore, tenancy: { header: 'x-tenant' } })
  t.teardown(async () => {
    await server.close()
    await stores.close()
    await dropSchemas(url, [schema])
  })

  const rpc = async (method: string, params: unknown, headers: Record<string, string> = V1) =>
    (await post(server.endpoint, { jsonrpc: '2.0', id: 1, method, params }, headers)).body
  const violation = (field: string, description: string) => ({
    '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description }]
  })
  const CHARACTERS = 'must hold no NUL character and no lone surrogate, and be neither "." nor ".."'

  t.test('a NUL or a lone surrogate in an id, a contextId or a tenant is InvalidParams, not an internal error', async t => {
    for (const [method, params, field] of [
      ['GetTask', { id: 'x\u0000y' }, 'id'],
      ['CancelTask', { id: 'x\ud800' }, 'id'],
      ['ListTasks', { contextId: 'c\u0000' }, 'contextId'],
      ['ListTasks', { tenant: 'alice\udfff' }, 'tenant'],
      ['GetTaskPushNotificationConfig', { taskId: 't', id: 'c\u0000' }, 'id'],
      ['SendMessage', { message: userMessage('hello', { contextId: 'c\u0000' }) }, 'message.contextId'],
      ['SendMessage', { message: { ...userMessage('hello'), messageId: 'm\udbff' } }, 'message.messageId']
    ] as const) {
      const answer = await rpc(method, params)
      t.same(answer.error, { code: -32602, message: `Invalid parameters: ${field} ${CHARACTERS}`, data: [violation(field, CHARACTERS)] }, `${method} ${field}`)
    }
    t.equal((await rpc('GetTask', { id: 'x\u2028y' })).error.code, -32001, 'any other character is an id like any other: not found')
  })

  t.test('two tenants that differ by a lone surrogate never meet: neither can be named', async t => {
    const created = await rpc('SendMessage', { tenant: 'alice\ufffd', message: userMessage('input') })
    const taskId = created.result.task.id
    for (const tenant of ['alice\ud800', 'alice\udbff']) {
      t.equal((await rpc('GetTask', { tenant, id: taskId })).error.code, -32602, tenant)
    }
    t.equal((await rpc('GetTask', { tenant: 'alice\ufffd', id: taskId })).result.status.state, 'TASK_STATE_INPUT_REQUIRED', 'U+FFFD itself is a character like any other')
  })

  t.test('at most 256 characters: the longest is stored and served, one more is InvalidParams', async t => {
    const contextId = 'c'.repeat(256)
    const tenant = '\u4e2d'.repeat(256)
    const created = await rpc('SendMessage', { tenant, message: userMessage('hello', { contextId }) })
    t.equal(created.result.task.contextId, contextId, '256 characters of three UTF-8 bytes each: within the indexes\' row size')
    t.equal((await rpc('ListTasks', { tenant, contextId })).result.totalSize, 1)
    const tooLong = await rpc('SendMessage', { message: userMessage('hello', { contextId: contextId + 'c' }) })
    t.same(tooLong.error.data, [violation('message.contextId', 'must not have more than 256 characters')])
    const longHeader = await rpc('GetTask', { id: 'x' }, { ...V1, 'x-tenant': 't'.repeat(257) })
    t.same(longHeader.error.data, [violation('tenant', `must be at most 256 characters and hold no NUL character and no lone surrogate, and be neither "." nor ".."`)], 'a tenant from a header is held to the same')
  })

  t.test('"." and ".." are no key: a URL resolves such a path segment away, so over HTTP+JSON they would name another path', async t => {
    for (const [method, params, field] of [
      ['ListTasks', { tenant: '.' }, 'tenant'],
      ['ListTasks', { tenant: '..' }, 'tenant'],
      ['GetTask', { id: '..' }, 'id'],
      ['SendMessage', { tenant: '.', message: userMessage('hello') }, 'tenant'],
      ['CreateTaskPushNotificationConfig', { taskId: 't', id: '.', url: 'https://example.com/hook' }, 'id'],
      ['SendMessage', { message: userMessage('hello', { contextId: '..' }) }, 'message.contextId']
    ] as const) {
      const answer = await rpc(method, params)
      t.same(answer.error, { code: -32602, message: `Invalid parameters: ${field} ${CHARACTERS}`, data: [violation(field, CHARACTERS)] }, `${method} ${field} ${JSON.stringify(params)}`)
    }
    const fromHeader = await rpc('ListTasks', {}, { ...V1, 'x-tenant': '..' })
    t.equal(fromHeader.error.code, -32602, 'a tenant from a header is held to the same')
    const client = await connect(wsUrl(server.origin))
    t.teardown(() => client.close())
    t.equal((await client.request('ListTasks', { tenant: '..' })).error.code, -32602, 'over WebSocket')
    for (const key of ['...', '.a', 'a.']) t.equal((await rpc('GetTask', { id: key })).error.code, -32001, `${key} is an id like any other`)
  })

  t.test('every binding: HTTP+JSON (path and query) and WebSocket', async t => {
    const reply = await rest(server.endpoint, 'GET', '/tasks/x%00y')
    t.equal(reply.status, 400)
    t.same(reply.body.error.details, [violation('id', CHARACTERS)], 'a path field')
    const query = await rest(server.endpoint, 'GET', '/tasks?contextId=c%00')
    t.same(query.body.error.details, [violation('contextId', CHARACTERS)])
    const client = await connect(wsUrl(server.origin))
    t.teardown(() => client.close())
    t.equal((await client.request('GetTask', { id: 'x\u0000' })).error.code, -32602)
    t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'the connection serves on')
  })
}
