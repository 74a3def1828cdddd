// Query parameters of HTTP+JSON (spec §11.5): camelCase names, numbers and booleans
// from strings, enum names, ISO 8601 timestamps, repeated or comma-separated lists, a bad
// value answered 400 naming the parameter, and A2A-Version as a query parameter.
import t from 'tap'
import Type from 'typebox'
import { queryDecoder } from '../lib/dispatcher/rest-query.js'
import { isA2AError, toRestError } from '../lib/index.js'
import { A2A_JSON_UTF8, rest, restResult } from './helpers/rest.js'
import { startServer, userMessage, V1 } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const base = server.endpoint
const send = async (text: string, extra = {}) => (await restResult(base, 'POST', '/message:send', { body: { message: userMessage(text, extra) } })).task
const violations = async (path: string) => (await rest(base, 'GET', path)).body.error.details[0].fieldViolations

t.test('the decoder reads each field by its schema', async t => {
  const decode = queryDecoder(Type.Object({
    count: Type.Optional(Type.Integer()),
    ratio: Type.Optional(Type.Number()),
    flag: Type.Optional(Type.Boolean()),
    name: Type.Optional(Type.String()),
    sizes: Type.Optional(Type.Array(Type.Integer())),
    tags: Type.Optional(Type.Array(Type.String()))
  }))
  t.same(decode({ count: '5', ratio: '-0.5', flag: 'true', name: '42' }), { count: 5, ratio: -0.5, flag: true, name: '42' })
  t.same(decode({ flag: 'false' }), { flag: false })
  t.same(decode({ count: 'abc', flag: 'yes', ratio: '1e3' }), { count: 'abc', flag: 'yes', ratio: '1e3' }, 'no literal: left for the validator to reject')
  t.same(decode({ sizes: ['1', '2'] }), { sizes: [1, 2] }, 'a repeated list')
  t.same(decode({ sizes: '1,2', tags: 'a,b' }), { sizes: [1, 2], tags: ['a', 'b'] }, 'a comma-separated list')
  t.same(decode({ tags: ['a,b', 'c'] }), { tags: ['a', 'b', 'c'] }, 'both at once')
  t.same(decode({ tags: 'one' }), { tags: ['one'] })
  t.same(decode({ other: 'x', 'A2A-Version': '1.0' }), {}, 'names the schema does not know are ignored')
  let thrown: unknown
  try {
    decode({ count: ['1', '2'], name: 'ok' })
  } catch (error) {
    thrown = error
  }
  t.ok(isA2AError(thrown))
  t.same(toRestError(thrown as any), {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'Invalid parameters: count must not be repeated',
      details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'count', description: 'must not be repeated' }] }]
    }
  })
})

t.test('ListTasks filters: status by enum name, includeArtifacts, historyLength, statusTimestampAfter', async t => {
  const contextId = `ctx-query-${Date.now()}`
  const waiting = await send('input', { contextId })
  const done = await send('done', { contextId })
  const byState = await restResult(base, 'GET', `/tasks?contextId=${contextId}&status=TASK_STATE_INPUT_REQUIRED`)
  t.same(byState.tasks.map((task: any) => task.id), [waiting.id])
  t.equal(byState.totalSize, 1)
  const defaults = await restResult(base, 'GET', `/tasks?contextId=${contextId}&status=TASK_STATE_UNSPECIFIED`)
  t.same(defaults.tasks.map((task: any) => task.id), [done.id, waiting.id], 'status at its default value filters nothing')
  const everywhere = await restResult(base, 'GET', '/tasks?contextId=&pageSize=100')
  t.ok([done.id, waiting.id].every(id => everywhere.tasks.some((task: any) => task.id === id)), 'contextId empty filters nothing')

  const withArtifacts = await restResult(base, 'GET', `/tasks?contextId=${contextId}&status=TASK_STATE_COMPLETED&includeArtifacts=true&historyLength=0`)
  t.same(withArtifacts.tasks, [{ id: done.id, contextId, status: done.status, artifacts: done.artifacts }])
  const without = await restResult(base, 'GET', `/tasks?contextId=${contextId}&status=TASK_STATE_COMPLETED&includeArtifacts=false&historyLength=1`)
  t.same(without.tasks, [{ id: done.id, contextId, status: done.status, history: done.history }])

  const since = (timestamp: string) => restResult(base, 'GET', `/tasks?contextId=${contextId}&statusTimestampAfter=${encodeURIComponent(timestamp)}`)
  t.equal((await since('2000-01-01T00:00:00Z')).totalSize, 2)
  t.equal((await since('2000-01-01T01:00:00.000+01:00')).totalSize, 2, 'an offset, URL-encoded')
  t.equal((await since('2999-01-01T00:00:00Z')).totalSize, 0)
})

t.test('pageSize and pageToken page through ListTasks and ListTaskPushNotificationConfigs', async t => {
  const contextId = `ctx-query-page-${Date.now()}`
  for (const text of ['a', 'b', 'c']) await send(text, { contextId })
  const first = await restResult(base, 'GET', `/tasks?contextId=${contextId}&pageSize=2`)
  t.same([first.tasks.length, first.pageSize, first.totalSize], [2, 2, 3])
  const last = await restResult(base, 'GET', `/tasks?contextId=${contextId}&pageSize=2&pageToken=${encodeURIComponent(first.nextPageToken)}`)
  t.same([last.tasks.length, last.nextPageToken], [1, ''])

  const task = await send('input')
  const path = `/tasks/${task.id}/pushNotificationConfigs`
  for (const id of ['one', 'two']) await restResult(base, 'POST', path, { body: { id, url: 'https://hooks.example.com/x' } })
  const page = await restResult(base, 'GET', `${path}?pageSize=1`)
  t.same(page.configs.map((config: any) => config.id), ['one'])
  t.same((await restResult(base, 'GET', `${path}?pageSize=1&pageToken=${encodeURIComponent(page.nextPageToken)}`)).configs.map((config: any) => config.id), ['two'])
})

t.test('a bad value → 400 INVALID_ARGUMENT naming the parameter', async t => {
  const reply = await rest(base, 'GET', '/tasks?pageSize=abc')
  t.equal(reply.status, 400)
  t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
  t.same(reply.body, {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'Invalid parameters: pageSize must be integer',
      details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'pageSize', description: 'must be integer' }] }]
    }
  })
  t.same(await violations('/tasks?pageSize=0'), [{ field: 'pageSize', description: 'must be >= 1' }])
  t.same(await violations('/tasks?pageSize=101'), [{ field: 'pageSize', description: 'must be <= 100' }])
  t.same(await violations('/tasks?pageSize=2.5'), [{ field: 'pageSize', description: 'must be integer' }])
  t.same(await violations('/tasks?pageSize=1&pageSize=2'), [{ field: 'pageSize', description: 'must not be repeated' }])
  t.same(await violations('/tasks?status=working'), [{ field: 'status', description: 'must be equal to one of the allowed values' }])
  t.same(await violations('/tasks?includeArtifacts=yes'), [{ field: 'includeArtifacts', description: 'must be boolean' }])
  t.same(await violations('/tasks?statusTimestampAfter=yesterday'), [{ field: 'statusTimestampAfter', description: 'must match format "date-time"' }])
  t.same(await violations('/tasks?statusTimestampAfter=2016-12-31T23%3A59%3A60Z'),
    [{ field: 'statusTimestampAfter', description: 'must be a Timestamp of years 0001 to 9999, with no leap second and no suffix' }])
  t.same(await violations('/tasks?historyLength=-1'), [{ field: 'historyLength', description: 'must be >= 0' }])
  t.same(await violations('/tasks/x?historyLength=many'), [{ field: 'historyLength', description: 'must be integer' }])
  t.same(await violations('/tasks/x/pushNotificationConfigs?pageSize=-1'), [{ field: 'pageSize', description: 'must be >= 0' }])
  t.same(await violations('/tasks?pageSize=0&status=working'), [
    { field: 'status', description: 'must be equal to one of the allowed values' },
    { field: 'pageSize', description: 'must be >= 1' }
  ], 'every bad parameter is named')
})

t.test('unknown query parameters are ignored; the path wins over a query field', async t => {
  const task = await send('x')
  t.equal((await restResult(base, 'GET', `/tasks/${task.id}?foo=bar&page_size=1`)).id, task.id)
  t.equal((await restResult(base, 'GET', `/tasks/${task.id}?id=other`)).id, task.id)
})

t.test('A2A-Version as a query parameter; the header wins; neither → 400 VERSION_NOT_SUPPORTED', async t => {
  const task = await send('x')
  t.equal((await rest(base, 'GET', `/tasks/${task.id}?A2A-Version=1.0`, { headers: {} })).status, 200)
  const onPost = await rest(base, 'POST', '/message:send?A2A-Version=1.0', { body: { message: userMessage('x') }, headers: { 'content-type': 'application/json' } })
  t.equal(onPost.status, 200, 'on a body route too')
  t.equal((await rest(base, 'GET', `/tasks/${task.id}?A2A-Version=0.3`, { headers: V1 })).status, 200, 'the header wins')
  const headerWins = await rest(base, 'GET', `/tasks/${task.id}?A2A-Version=1.0`, { headers: { 'a2a-version': '0.3' } })
  t.equal(headerWins.status, 400)
  t.same(headerWins.body.error.details[0].metadata, { requestedVersion: '0.3', supportedVersions: '1.0' })
  const neither = await rest(base, 'GET', `/tasks/${task.id}`, { headers: {} })
  t.equal(neither.status, 400)
  t.same([neither.body.error.status, neither.body.error.details[0].reason], ['FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED'])
})
