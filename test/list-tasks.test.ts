// ListTasks (spec §3.4, §2.15–2.16): filters, newest first, cursor paging, the fields
// that are always present, artifacts only on request.
import t from 'tap'
import { call, result, startServer, userMessage } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const url = server.endpoint

const contextId = 'list-context'
const created: string[] = []
for (let i = 0; i < 7; i++) {
  const task = (await result(url, 'SendMessage', { message: userMessage(i === 3 ? 'input' : `task ${i}`, { contextId }) })).task
  created.push(task.id)
  await new Promise(resolve => setTimeout(resolve, 3))
}
await result(url, 'SendMessage', { message: userMessage('elsewhere', { contextId: 'other-context' }) })

t.test('a context filter, newest status first, every field present', async t => {
  const page = await result(url, 'ListTasks', { contextId })
  t.same(Object.keys(page).sort(), ['nextPageToken', 'pageSize', 'tasks', 'totalSize'])
  t.same(page.tasks.map((task: any) => task.id), created.slice().reverse())
  t.equal(page.nextPageToken, '', 'the last page has an empty token')
  t.equal(page.pageSize, 50, 'the default page size')
  t.equal(page.totalSize, 7)
  t.ok(page.tasks.every((task: any) => !('artifacts' in task)), 'artifacts are left out entirely by default')
})

t.test('includeArtifacts: true includes them', async t => {
  const page = await result(url, 'ListTasks', { contextId, includeArtifacts: true, pageSize: 1 })
  t.same(page.tasks[0].artifacts, [{ artifactId: 'echo', parts: [{ text: 'task 6' }] }])
})

t.test('paging with the opaque cursor covers every task once', async t => {
  const seen: string[] = []
  let pageToken: string | undefined
  let pages = 0
  do {
    const page = await result(url, 'ListTasks', pageToken === undefined ? { contextId, pageSize: 3 } : { contextId, pageSize: 3, pageToken })
    t.equal(page.pageSize, 3)
    t.equal(page.totalSize, 7)
    seen.push(...page.tasks.map((task: any) => task.id))
    pageToken = page.nextPageToken
    pages++
  } while (pageToken !== '')
  t.equal(pages, 3)
  t.same(seen, created.slice().reverse())
})

t.test('status filter uses the exact enum name', async t => {
  const page = await result(url, 'ListTasks', { contextId, status: 'TASK_STATE_INPUT_REQUIRED' })
  t.same(page.tasks.map((task: any) => task.id), [created[3]])
  t.equal(page.totalSize, 1)
})

t.test('a filter holding its default value (contextId "", status TASK_STATE_UNSPECIFIED) filters nothing', async t => {
  const ids = (page: any) => page.tasks.map((task: any) => task.id)
  const all = await result(url, 'ListTasks', {})
  t.equal(all.totalSize, 8)
  t.same(ids(await result(url, 'ListTasks', { contextId: '' })), ids(all))
  t.same(ids(await result(url, 'ListTasks', { status: 'TASK_STATE_UNSPECIFIED' })), ids(all))
  const inContext = await result(url, 'ListTasks', { contextId, status: 'TASK_STATE_UNSPECIFIED' })
  t.same(ids(inContext), created.slice().reverse(), 'with another filter, that one alone applies')
})

t.test('statusTimestampAfter keeps tasks updated at or after the instant', async t => {
  const all = await result(url, 'ListTasks', { contextId })
  const pivot = all.tasks[2].status.timestamp
  const page = await result(url, 'ListTasks', { contextId, statusTimestampAfter: pivot })
  t.same(page.tasks.map((task: any) => task.id), all.tasks.slice(0, 3).map((task: any) => task.id))

  // A microsecond after the pivot's millisecond: the pivot task, stamped at that millisecond, is before it.
  const later = await result(url, 'ListTasks', { contextId, statusTimestampAfter: pivot.replace('Z', '001Z') })
  const after = all.tasks.filter((task: any) => Date.parse(task.status.timestamp) > Date.parse(pivot))
  t.same(later.tasks.map((task: any) => task.id), after.map((task: any) => task.id), 'a fraction below a millisecond is not dropped')
})

t.test('statusTimestampAfter that is no ProtoJSON Timestamp → -32602, not a filter dropped', async t => {
  for (const timestamp of ['2999-12-31T23:59:60Z', '2024-01-01T00:00:00Z[Europe/Paris]', '0000-01-01T00:00:00Z', '2024-01-01T00:00:00.1234567891Z']) {
    const { error } = await call(url, 'ListTasks', { statusTimestampAfter: timestamp })
    t.equal(error.code, -32602, timestamp)
    t.strictSame(error.data.find((detail: any) => detail['@type'].endsWith('BadRequest')).fieldViolations,
      [{ field: 'statusTimestampAfter', description: 'must be a Timestamp of years 0001 to 9999, with no leap second and no suffix' }])
  }
  t.equal((await result(url, 'ListTasks', { statusTimestampAfter: '9999-12-31t23:59:59.999999999z' })).totalSize, 0, 'the latest Timestamp, in lower case')
})

t.test('historyLength applies to every listed task', async t => {
  const page = await result(url, 'ListTasks', { contextId, historyLength: 0 })
  t.ok(page.tasks.every((task: any) => !('history' in task)))
})

t.test('invalid arguments → -32602 naming the field', async t => {
  for (const [params, field] of [[{ pageSize: 0 }, 'pageSize'], [{ pageSize: 101 }, 'pageSize'], [{ status: 'working' }, 'status'],
    [{ historyLength: -1 }, 'historyLength'], [{ statusTimestampAfter: 'last week' }, 'statusTimestampAfter']] as const) {
    const { error } = await call(url, 'ListTasks', params)
    t.equal(error.code, -32602, JSON.stringify(params))
    t.equal(error.data[0].fieldViolations[0].field, field)
  }
  const { error } = await call(url, 'ListTasks', { pageToken: 'not-a-token' })
  t.same(error, {
    code: -32602,
    message: 'Invalid parameters: pageToken is not a token this server issued',
    data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'pageToken', description: 'is not a token this server issued' }] }]
  })
})

t.test('an empty result is a well-formed page', async t => {
  t.same(await result(url, 'ListTasks', { contextId: 'nobody' }), { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 })
})
