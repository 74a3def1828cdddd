// The four push-notification-config methods (spec §3.7–3.10) and the capability gate.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { conformanceCard } from '../examples/agent.js'
import { MemoryPushConfigStore, type PushConfigStore } from '../lib/index.js'
import { rest } from './helpers/rest.js'
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
  t.same(await result(url, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: 5000 }), listed, 'the method sets no maximum: a larger page is served at ours')
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
  // Else sent as Basic auth and echoed by Get and List: credentials belong in `authentication`.
  for (const withUser of ['https://alice:s3cret@h.example/x', 'https://alice@h.example/x', 'https://:s3cret@h.example/x']) {
    const refused = await call(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: withUser })
    t.same(refused.error.data[0].fieldViolations, [{ field: 'url', description: 'must hold no user or password: give credentials in authentication' }], withUser)
    const inline = await call(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: withUser } } })
    t.equal(inline.error.code, -32602, `${withUser} inline`)
  }
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

const fullError = (max: number) => {
  const description = `already has ${max} push notification configs, the most a task may have: delete one, or replace one by its id`
  return {
    jsonRpc: { code: -32602, message: `Invalid parameters: taskId ${description}`, data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'taskId', description }] }] },
    rest: { error: { code: 400, status: 'INVALID_ARGUMENT', message: `Invalid parameters: taskId ${description}`, details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'taskId', description }] }] } }
  }
}

t.test('a task has at most push.maxConfigsPerTask configs, 10 by default; replacing one by its id adds none', async t => {
  const capped = (await result(url, 'SendMessage', { message: userMessage('input') })).task
  for (let i = 0; i < 10; i++) await result(url, 'CreateTaskPushNotificationConfig', { taskId: capped.id, id: `c${i}`, url: `https://hooks.example.com/${i}` })
  const { error } = await call(url, 'CreateTaskPushNotificationConfig', { taskId: capped.id, id: 'c10', url: 'https://hooks.example.com/10' })
  t.strictSame(error, fullError(10).jsonRpc)

  const small = await startServer({ push: { allow: ['hooks.example.com'], maxConfigsPerTask: 2 } })
  t.teardown(() => small.close())
  const base = small.endpoint
  const task = (await result(base, 'SendMessage', { message: userMessage('input') })).task
  await result(base, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'a', url: 'https://hooks.example.com/a' })
  await result(base, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'b', url: 'https://hooks.example.com/b' })
  t.strictSame((await call(base, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://hooks.example.com/c' })).error, fullError(2).jsonRpc, 'JSON-RPC')
  const reply = await rest(base, 'POST', `/tasks/${task.id as string}/pushNotificationConfigs`, { body: { url: 'https://hooks.example.com/c' } })
  t.equal(reply.status, 400)
  t.strictSame(reply.body, fullError(2).rest, 'REST')
  const inline = await call(base, 'SendMessage', {
    message: userMessage('refused', { taskId: task.id }),
    configuration: { taskPushNotificationConfig: { id: 'c', url: 'https://hooks.example.com/c' } }
  })
  t.strictSame(inline.error, fullError(2).jsonRpc, 'an inline config on the task')
  const after = await result(base, 'GetTask', { id: task.id })
  t.equal(after.status.state, 'TASK_STATE_INPUT_REQUIRED', 'the refused message started no turn')
  t.notOk(after.history.some((message: any) => message.parts[0]?.text === 'refused'), 'nor was it added to the history')
  t.same(await result(base, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'a', url: 'https://hooks.example.com/a2' }),
    { id: 'a', taskId: task.id, url: 'https://hooks.example.com/a2' }, 'a replacement is no new config')
  await result(base, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'b' })
  await result(base, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'c', url: 'https://hooks.example.com/c' })
  t.same((await result(base, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs.map((c: any) => c.id), ['a', 'c'], 'a deleted one made room')
})

t.test('concurrent creations on one task cannot pass the cap together, however slow the store', async t => {
  const configs = new MemoryPushConfigStore()
  const slow: PushConfigStore = {
    isolatesTenants: true,
    set: (config, scope) => configs.set(config, scope),
    get: (taskId, id, scope) => configs.get(taskId, id, scope),
    // Read at once, answered late: a database under load.
    list: async (taskId, page, scope) => {
      const listed = await configs.list(taskId, page, scope)
      await sleep(50)
      return listed
    },
    delete: (taskId, id, scope) => configs.delete(taskId, id, scope)
  }
  const small = await startServer({ pushConfigStore: slow, push: { allow: ['hooks.example.com'], maxConfigsPerTask: 2 } })
  t.teardown(() => small.close())
  const task = (await result(small.endpoint, 'SendMessage', { message: userMessage('input') })).task
  const replies = await Promise.all(Array.from({ length: 6 }, (_, i) =>
    call(small.endpoint, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: `c${i}`, url: `https://hooks.example.com/${i}` })))
  t.equal(replies.filter(reply => reply.result !== undefined).length, 2, 'two created')
  t.strictSame(replies.filter(reply => reply.error !== undefined).map(reply => reply.error), Array(4).fill(fullError(2).jsonRpc), 'four refused')
  t.equal((await configs.list(task.id, { pageSize: 10 }, { tenant: '' })).configs.length, 2)
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
  // The capability is told before the params are read: what is wrong with them does not matter.
  for (const [method, params] of [['CreateTaskPushNotificationConfig', { taskId: own.id }], ['GetTaskPushNotificationConfig', {}], ['ListTaskPushNotificationConfigs', { taskId: own.id, pageSize: -1 }], ['DeleteTaskPushNotificationConfig', { id: 'x' }]] as const) {
    t.equal((await call(noPush.endpoint, method, params)).error.code, -32003, `${method} with bad params`)
  }
  const rest = await fetch(`${noPush.endpoint}/tasks/${own.id as string}/pushNotificationConfigs`, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: '{}' })
  t.equal(rest.status, 400)
  t.equal((await rest.json()).error.details[0].reason, 'PUSH_NOTIFICATION_NOT_SUPPORTED', 'HTTP+JSON too')
})
