// The four push-notification-config methods (spec §3.7–3.10) and the capability gate.
import t from 'tap'
import { conformanceCard } from '../examples/agent.js'
import { call, result, startServer, userMessage } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const url = server.endpoint
const task = (await result(url, 'SendMessage', { message: userMessage('input') })).task

t.test('create assigns an id; get, list and delete follow', async t => {
  const created = await result(url, 'CreateTaskPushNotificationConfig', {
    taskId: task.id, url: 'https://hooks.example.com/a2a', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' }
  })
  t.match(created, { taskId: task.id, url: 'https://hooks.example.com/a2a', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' } })
  t.type(created.id, 'string')
  const named = await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'mine', url: 'https://hooks.example.com/b' })
  t.same(named, { id: 'mine', taskId: task.id, url: 'https://hooks.example.com/b' })
  t.same(await result(url, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'mine' }), named)
  const listed = await result(url, 'ListTaskPushNotificationConfigs', { taskId: task.id })
  t.same(listed, { configs: [created, named], nextPageToken: '' })
  const first = await result(url, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: 1 })
  t.same(first.configs, [created])
  t.not(first.nextPageToken, '')
  const second = await result(url, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: 1, pageToken: first.nextPageToken })
  t.same(second, { configs: [named], nextPageToken: '' })
  t.same(await result(url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'mine' }), {})
  t.same(await result(url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'mine' }), {}, 'delete is idempotent')
  t.same((await result(url, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs, [created])
})

t.test('a missing config or task → -32001 TaskNotFound', async t => {
  const { error } = await call(url, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'nope' })
  t.same(error, {
    code: -32001,
    message: `Task not found: ${task.id} has no push notification config nope`,
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: task.id, configId: 'nope' } }]
  })
  for (const method of ['CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig']) {
    t.equal((await call(url, method, { taskId: 'no-task', id: 'x', url: 'https://h.example/x' })).error.code, -32001, method)
  }
})

t.test('required fields and a URL that is not http(s) → -32602', async t => {
  t.equal((await call(url, 'CreateTaskPushNotificationConfig', { taskId: task.id })).error.data[0].fieldViolations[0].field, 'url')
  t.equal((await call(url, 'CreateTaskPushNotificationConfig', { url: 'https://h.example' })).error.data[0].fieldViolations[0].field, 'taskId')
  const { error } = await call(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'ftp://h.example/x' })
  t.same(error.data[0].fieldViolations, [{ field: 'url', description: 'must be an absolute http or https URL' }])
})

t.test('an inline config in SendMessage is stored with the new task', async t => {
  const created = (await result(url, 'SendMessage', {
    message: userMessage('input'), configuration: { taskPushNotificationConfig: { url: 'https://hooks.example.com/inline' } }
  })).task
  const { configs } = await result(url, 'ListTaskPushNotificationConfigs', { taskId: created.id })
  t.equal(configs.length, 1)
  t.match(configs[0], { taskId: created.id, url: 'https://hooks.example.com/inline' })
})

t.test('the default stores are paired: a task evicted from the memory task store takes its configs along', async t => {
  const own = await startServer()
  t.teardown(() => own.close())
  const done = (await result(own.endpoint, 'SendMessage', { message: userMessage('hello') })).task
  t.equal(done.status.state, 'TASK_STATE_COMPLETED')
  await result(own.endpoint, 'CreateTaskPushNotificationConfig', { taskId: done.id, id: 'c', url: 'https://hooks.example.com/c' })
  const { taskStore, pushConfigStore } = own.fastify.a2a
  t.equal(pushConfigStore.hasConfigs?.(done.id, { tenant: '' }), true)
  // The default store holds 10,000 tasks: 10,000 more evict the oldest terminal one, `done`.
  for (let i = 0; i < 10_000; i++) await taskStore.create({ id: `filler-${i}`, contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }, { tenant: '' })
  t.equal((await call(own.endpoint, 'GetTask', { id: done.id })).error.code, -32001, 'the task was evicted')
  t.equal(pushConfigStore.hasConfigs?.(done.id, { tenant: '' }), false, 'and its configs with it')
  t.equal(await pushConfigStore.get(done.id, 'c', { tenant: '' }), undefined)
})

t.test('push not declared → -32003 on all four methods and on an inline config', async t => {
  const noPush = await startServer({ card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, pushNotifications: false } } })
  t.teardown(() => noPush.close())
  const own = (await result(noPush.endpoint, 'SendMessage', { message: userMessage('input') })).task
  for (const method of ['CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig']) {
    const { error } = await call(noPush.endpoint, method, { taskId: own.id, id: 'x', url: 'https://h.example/x' })
    t.same(error, {
      code: -32003,
      message: 'Push notifications are not supported',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED', domain: 'a2a-protocol.org' }]
    }, method)
  }
  const inline = await call(noPush.endpoint, 'SendMessage', { message: userMessage('x'), configuration: { taskPushNotificationConfig: { url: 'https://h.example/x' } } })
  t.equal(inline.error.code, -32003)
})
