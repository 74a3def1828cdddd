// Push-notification delivery (spec §11) to real webhook receivers on 127.0.0.1
// (allow-listed): bodies, headers, per-config order, retries and backoff, what is not
// retried, timeouts, deletion, the queue bound, the metrics callback, secrets kept out
// of logs, shutdown.
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import {
  MemoryPushConfigStore, PUSH_DEFAULTS, PushSender, a2aWebSocket, type PushConfigStore, type PushDeliveryReport, type PushOutbox
} from '../lib/index.js'
import { eventually, result, startServer, stream, userMessage, type TestServer } from './helpers/server.js'
import { logLines, processWarnings } from './helpers/logs.js'
import { timeoutsMadeIn } from './helpers/timers.js'
import { startReceiver, type Answer } from './helpers/webhook.js'

async function setup (t: Test, answer?: Answer, push: Record<string, unknown> = {}, pushConfigStore?: PushConfigStore) {
  const receiver = await startReceiver(answer)
  const reports: PushDeliveryReport[] = []
  const server: TestServer = await startServer({
    push: { allow: ['127.0.0.1'], retryDelay: 1, onDelivery: report => reports.push(report), ...push },
    ...(pushConfigStore === undefined ? {} : { pushConfigStore })
  })
  t.teardown(async () => {
    await server.close()
    await receiver.close()
  })
  const sender = server.fastify.a2a.push as PushSender
  return { receiver, reports, server, url: server.endpoint, sender }
}

t.test('every event of a streamed task is POSTed as the bare StreamResponse, in order, with the headers', async t => {
  const { receiver, url, sender, reports } = await setup(t)
  const hook = `${receiver.origin}/hook`
  const { events } = await stream(url, 'SendStreamingMessage', {
    message: userMessage('stream 3'),
    configuration: { taskPushNotificationConfig: { url: hook, token: 'tok-1', authentication: { scheme: 'Bearer', credentials: 'cred-1' } } }
  })
  await sender.idle()
  const streamed = events.map(e => e.data.result)
  t.equal(streamed.length, 6)
  t.same(receiver.bodies('/hook'), streamed, 'the webhook got exactly the stream: same events, same order, no envelope')
  for (const { method, headers } of receiver.received) {
    t.equal(method, 'POST')
    t.equal(headers['content-type'], 'application/a2a+json')
    t.equal(headers.authorization, 'Bearer cred-1')
    t.equal(headers['x-a2a-notification-token'], 'tok-1')
  }
  const taskId = streamed[0].task.id
  const [config] = (await result(url, 'ListTaskPushNotificationConfigs', { taskId })).configs
  t.same(reports.map(r => r.event), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  t.same(reports[0], { outcome: 'delivered', taskId, configId: config.id, tenant: '', event: 'task', attempts: 1, status: 200 })
  t.same(sender.stats, { delivered: 6, failed: 0, refused: 0, dropped: 0 })
})

t.test("an agent message on a task, no stream event, is a push notification", async t => {
  const receiver = await startReceiver()
  const server = await startServer({
    push: { allow: ['127.0.0.1'], retryDelay: 1 },
    executor: {
      async execute (_context, events) {
        await events.working()
        await events.message('thinking aloud')
        await events.completed()
      }
    }
  })
  t.teardown(async () => {
    await server.close()
    await receiver.close()
  })
  const { events } = await stream(server.endpoint, 'SendStreamingMessage', {
    message: userMessage('go'),
    configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/hook` } }
  })
  await (server.fastify.a2a.push as PushSender).idle()
  const streamed = events.map(e => e.data.result)
  const taskId = streamed[0].task.id
  const pushed = receiver.bodies('/hook')
  t.same(pushed.map((body: any) => Object.keys(body)[0]), ['task', 'statusUpdate', 'message', 'statusUpdate'])
  t.match(pushed[2].message, { role: 'ROLE_AGENT', taskId, parts: [{ text: 'thinking aloud' }] })
  t.same(pushed.filter((body: any) => body.message === undefined), streamed, 'the rest is the stream')
})

t.test('a config without token or authentication sends neither header', async t => {
  const { receiver, url, sender } = await setup(t)
  await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/plain` } } })
  await sender.idle()
  t.equal(receiver.received.length, 4, 'task, working, artifact, completed')
  for (const { headers } of receiver.received) {
    t.equal(headers.authorization, undefined)
    t.equal(headers['x-a2a-notification-token'], undefined)
  }
})

t.test('configs created later receive what follows; each config its own ordered copy; a deleted one nothing more', async t => {
  const { receiver, url, sender } = await setup(t)
  const task = (await result(url, 'SendMessage', { message: userMessage('input') })).task
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  for (const id of ['a', 'b', 'gone']) {
    await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id, url: `${receiver.origin}/${id}` })
  }
  await result(url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'gone' })
  const done = (await result(url, 'SendMessage', { message: userMessage('the answer', { taskId: task.id }) })).task
  t.equal(done.status.state, 'TASK_STATE_COMPLETED')
  await sender.idle()
  const expected = [
    { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'echo', parts: [{ text: 'the answer' }] } } },
    { statusUpdate: { taskId: task.id, contextId: task.contextId, status: done.status } }
  ]
  t.same(receiver.bodies('/a'), expected)
  t.same(receiver.bodies('/b'), expected)
  t.same(receiver.bodies('/gone'), [], 'nothing after deletion')
})

/** A config store slow to list (a database under load): lookups of a task's events lag behind its answers. */
function slowConfigStore (): PushConfigStore {
  const configs = new MemoryPushConfigStore()
  return {
    isolatesTenants: true,
    set: (config, scope) => configs.set(config, scope),
    get: (taskId, id, scope) => configs.get(taskId, id, scope),
    list: async (taskId, page, scope) => {
      await sleep(100)
      return await configs.list(taskId, page, scope)
    },
    delete: (taskId, id, scope) => configs.delete(taskId, id, scope)
  }
}

// The lookups of the task's first two events are still running when the client, answered at
// once, adds a config: created, or inline with the message that continues the task.
for (const how of ['created', 'inline'] as const) {
  t.test(`a config ${how} while the lookups of earlier events still wait gets none of those events`, async t => {
    const receiver = await startReceiver()
    const server = await startServer({ pushConfigStore: slowConfigStore(), push: { allow: ['127.0.0.1'], retryDelay: 1 } })
    t.teardown(async () => {
      await server.close()
      await receiver.close()
    })
    const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('input') })).task
    t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
    const config = { id: 'late', url: `${receiver.origin}/late` }
    if (how === 'created') await result(server.endpoint, 'CreateTaskPushNotificationConfig', { taskId: task.id, ...config })
    const message = userMessage('the answer', { taskId: task.id })
    const done = (await result(server.endpoint, 'SendMessage', how === 'created' ? { message } : { message, configuration: { taskPushNotificationConfig: config } })).task
    await (server.fastify.a2a.push as PushSender).idle()
    t.same(receiver.bodies('/late'), [
      { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: { artifactId: 'echo', parts: [{ text: 'the answer' }] } } },
      { statusUpdate: { taskId: task.id, contextId: task.contextId, status: done.status } }
    ], 'the events after its creation, not the task and INPUT_REQUIRED from before')
  })
}

t.test('deleting a config stops the deliveries already queued for it', async t => {
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, url, sender, reports } = await setup(t, () => held)
  const task = (await result(url, 'SendMessage', { message: userMessage('input') })).task
  await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'c', url: `${receiver.origin}/c` })
  await result(url, 'SendMessage', { message: userMessage('stream 3', { taskId: task.id }) })
  await eventually(() => receiver.received.length === 1)
  await result(url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'c' })
  release()
  await sender.idle()
  t.equal(receiver.received.length, 1, 'only the delivery already in flight reached the webhook')
  t.same(reports.map(r => r.outcome), ['delivered'], 'the queued events were discarded, not attempted')
})

for (const how of ['by DeleteTaskPushNotificationConfig', 'in the store, behind the sender (as on another instance)']) {
  t.test(`a config deleted ${how} while its event is retried: that event is reported failed, config deleted; the queued ones are not`, async t => {
    // The backoff (300 to 600 ms) leaves the deletion ample time to come between two attempts.
    const { receiver, url, sender, reports, server } = await setup(t, () => 503, { retryDelay: 600 })
    const task = (await result(url, 'SendMessage', { message: userMessage('input') })).task
    await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'c', url: `${receiver.origin}/c` })
    await result(url, 'SendMessage', { message: userMessage('the answer', { taskId: task.id }) })
    await eventually(() => reports.length === 0 && receiver.received.length === 1)
    if (how.startsWith('by')) await result(url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'c' })
    else await server.fastify.a2a.pushConfigStore.delete(task.id, 'c', { tenant: '' })
    await sender.idle()
    t.equal(receiver.received.length, 1, 'no attempt after the deletion')
    t.same(reports, [{ outcome: 'failed', taskId: task.id, configId: 'c', tenant: '', event: 'artifactUpdate', attempts: 1, status: 503, reason: 'config deleted' }],
      'the event attempted is given up, once; the final status, not attempted, goes without a report')
    t.same(sender.stats, { delivered: 0, failed: 1, refused: 0, dropped: 0 })
  })
}

t.test('a config deleted and created again under its id gets none of what was queued for the deleted one', async t => {
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, url, sender, reports } = await setup(t, path => path === '/old' ? held : 503)
  const task = (await result(url, 'SendMessage', { message: userMessage('stream 3'), configuration: { taskPushNotificationConfig: { id: 'a', url: `${receiver.origin}/old` } } })).task
  await eventually(() => receiver.bodies('/old').length === 1)
  await result(url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'a' })
  await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'a', url: `${receiver.origin}/new` })
  release()
  await sender.idle()
  t.same(receiver.bodies('/new'), [], 'the new config is sent nothing from before its creation')
  t.same(receiver.bodies('/old').length, 1, 'the old URL got the delivery in flight only: a retry of it (503) is not attempted at the new one')
  t.same(reports.map(r => [r.event, r.outcome]), [['task', 'delivered']])
})

t.test('a receiver that fails twice then succeeds gets the same body three times, and order holds', async t => {
  const { receiver, url, sender, reports } = await setup(t, (path, n) => path === '/flaky' && n <= 2 ? 503 : 200)
  await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/flaky` } } })
  await sender.idle()
  const bodies = receiver.bodies('/flaky')
  t.equal(bodies.length, 6, 'three tries of the first event, then the three others once')
  t.same(bodies[0], bodies[1])
  t.same(bodies[1], bodies[2])
  t.same(bodies.slice(2).map(body => Object.keys(body)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.same(reports.map(r => [r.outcome, r.attempts, r.status]), [['delivered', 3, 200], ['delivered', 1, 200], ['delivered', 1, 200], ['delivered', 1, 200]])
})

/** A memory config store whose `get` (or `list`) throws while `failing()` says so, as a database that drops a connection does. */
function flakyConfigs (failing: () => boolean, method: 'get' | 'list' = 'get'): PushConfigStore {
  const memory = new MemoryPushConfigStore()
  return {
    isolatesTenants: true,
    set: (config, scope) => memory.set(config, scope),
    delete: (taskId, id, scope) => memory.delete(taskId, id, scope),
    async list (taskId, page, scope) {
      if (method === 'list' && failing()) throw new Error('connection reset')
      return await memory.list(taskId, page, scope)
    },
    async get (taskId, id, scope) {
      if (method === 'get' && failing()) throw new Error('connection reset')
      return await memory.get(taskId, id, scope)
    }
  }
}

t.test('a config store that fails a moment: the lookup is tried again after the backoff, and nothing is lost', async t => {
  let failures = 2
  const { receiver, url, sender, reports } = await setup(t, undefined, {}, flakyConfigs(() => failures-- > 0))
  await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/hook` } } })
  await sender.idle()
  t.same(receiver.bodies('/hook').map(body => Object.keys(body)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'], 'every event, in order')
  t.same(reports.map(r => [r.outcome, r.attempts, r.status]), [['delivered', 3, 200], ['delivered', 1, 200], ['delivered', 1, 200], ['delivered', 1, 200]],
    'the first event after two failed lookups')
})

t.test('a config store that keeps failing: each event is given up after maxAttempts, reported as a store error', async t => {
  const { receiver, url, sender, reports } = await setup(t, undefined, { maxAttempts: 2 }, flakyConfigs(() => true))
  await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/hook` } } })
  await sender.idle()
  t.equal(receiver.received.length, 0)
  t.same(reports.map(r => [r.outcome, r.attempts, r.reason]), Array.from({ length: 4 }, () => ['failed', 2, 'store error']))
})

t.test('reading the task\'s configs fails a moment: the event\'s lookup is tried again after the backoff, and nothing is lost', async t => {
  const task = { failures: 0 }
  const { receiver, url, sender, reports } = await setup(t, undefined, {}, flakyConfigs(() => task.failures-- > 0, 'list'))
  const created = (await result(url, 'SendMessage', { message: userMessage('input'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/hook` } } })).task
  await sender.idle()
  task.failures = 2
  await result(url, 'SendMessage', { message: userMessage('the answer', { taskId: created.id }) })
  await sender.idle()
  t.same(receiver.bodies('/hook').map(body => Object.keys(body)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'], 'every event once, in order')
  t.same(reports.map(r => r.outcome), ['delivered', 'delivered', 'delivered', 'delivered'])
})

t.test('reading the task\'s configs keeps failing: each event is given up after maxAttempts, reported with no config id', async t => {
  const { receiver, url, sender, reports } = await setup(t, undefined, { maxAttempts: 2 }, flakyConfigs(() => true, 'list'))
  const created = (await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/hook` } } })).task
  await sender.idle()
  t.equal(receiver.received.length, 0)
  t.same(reports, ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'].map(event => ({
    outcome: 'failed', taskId: created.id, configId: '', tenant: '', event, attempts: 2, reason: 'store error'
  })))
})

t.test('a 429 or 503 with Retry-After: the next attempt waits as long, up to maxRetryDelay', async t => {
  // The sender's timers: each attempt's deadline (timeout) and each wait before a retry.
  const timers = timeoutsMadeIn(t, 'lib/push/sender.ts')
  const waits = () => timers.filter(timer => timer.delay !== 10_000)
  // Whole seconds, as an HTTP date has no fraction, and 3 to 5 s ahead when read: past the cap.
  const inHttpDate = new Date(Math.ceil(Date.now() / 1000) * 1000 + 4000).toUTCString()
  const firedAtRetry: Record<string, number[]> = {}
  const { receiver, url, sender, reports } = await setup(t, (path, n) => {
    if (n === 2) firedAtRetry[path] = waits().filter(wait => wait.fired).map(wait => wait.delay)
    if (n > 1) return 200
    if (path === '/seconds') return { status: 429, headers: { 'retry-after': '1' } }
    if (path === '/date') return { status: 503, headers: { 'retry-after': inHttpDate } }
    return { status: 503, headers: { 'retry-after': '3600' } }
  }, { maxRetryDelay: 1500, timeout: 10_000 })
  const taskIds: string[] = []
  for (const path of ['/seconds', '/date', '/capped']) {
    taskIds.push((await result(url, 'SendMessage', { message: userMessage('input'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}${path}` } } })).task.id)
  }
  await sender.idle()
  // Per task: '/date' and '/capped' wait the same 1.5 s, so their reports may interleave.
  t.same(taskIds.map(taskId => reports.filter(r => r.taskId === taskId).map(r => [r.outcome, r.attempts, r.status])),
    Array.from({ length: 3 }, () => [['delivered', 2, 200], ['delivered', 1, 200]]),
    'each first event delivered at its second attempt, the second event at once')
  t.same(waits().map(wait => wait.delay).sort((a, b) => a - b), [1000, 1500, 1500],
    'Retry-After: 1 waited 1 s (retryDelay is 1 ms); the HTTP date and Retry-After: 3600 waited maxRetryDelay, 1.5 s')
  t.ok(waits().every(wait => wait.fired), 'each wait ran out before its retry')
  t.same(firedAtRetry['/seconds'], [1000], 'Retry-After: 1 was retried once its own wait ran out')
  t.ok(firedAtRetry['/date']?.includes(1500) && firedAtRetry['/capped']?.includes(1500), 'the capped ones once a wait of maxRetryDelay ran out')
})

t.test('408 and 429 are retried; another 4xx is not, and the queue moves on', async t => {
  const statuses: Record<string, number[]> = { '/busy': [429, 408, 200], '/bad': [400, 200, 200, 200, 200] }
  const { receiver, url, sender, reports } = await setup(t, (path, n) => statuses[path]?.[n - 1] ?? 200)
  const busy = (await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { id: 'busy', url: `${receiver.origin}/busy` } } })).task
  await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { id: 'bad', url: `${receiver.origin}/bad` } } })
  await sender.idle()
  t.equal(receiver.bodies('/busy').length, 6, 'the first event three times, the others once')
  const bad = receiver.bodies('/bad')
  t.equal(bad.length, 4, 'the 400 was not retried')
  t.same(bad.map(body => Object.keys(body)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.same(reports.filter(r => r.configId === 'bad').map(r => [r.outcome, r.attempts, r.status ?? null, r.reason ?? null]), [
    ['failed', 1, 400, 'HTTP 400'], ['delivered', 1, 200, null], ['delivered', 1, 200, null], ['delivered', 1, 200, null]
  ])
  t.same(reports.find(r => r.configId === 'busy'), { outcome: 'delivered', taskId: busy.id, configId: 'busy', tenant: '', event: 'task', attempts: 3, status: 200 })
})

t.test('attempts are bounded: a webhook that always fails is given up after maxAttempts', async t => {
  const { receiver, url, sender, reports } = await setup(t, () => 500, { maxAttempts: 3 })
  await result(url, 'SendMessage', { message: userMessage('fail'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/down` } } })
  await sender.idle()
  t.equal(receiver.received.length, 6, 'two events, three attempts each')
  t.same(reports.map(r => [r.outcome, r.attempts, r.status]), [['failed', 3, 500], ['failed', 3, 500]])
  t.same(sender.stats, { delivered: 0, failed: 2, refused: 0, dropped: 0 })
})

t.test('an attempt that gets no answer times out and is retried', async t => {
  const never = new Promise<number>(() => {})
  const { receiver, url, sender, reports } = await setup(t, (_path, n) => n === 1 ? never : 200, { timeout: 200 })
  await result(url, 'SendMessage', { message: userMessage('fail'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/slow` } } })
  await sender.idle()
  t.equal(receiver.bodies('/slow').length, 3)
  t.same(reports.map(r => [r.outcome, r.attempts]), [['delivered', 2], ['delivered', 1]])
})

t.test('a webhook that answers 2xx and never ends its body holds no socket past the attempt timeout', async t => {
  const open = new Set<Socket>()
  // The sender's timers of 200 ms: each attempt's deadline.
  const deadlines = timeoutsMadeIn(t, 'lib/push/sender.ts')
  /** At each request's arrival, how many attempts had reached their deadline. */
  const deadlinesPassed: number[] = []
  const endless = createServer((request, response) => {
    deadlinesPassed.push(deadlines.filter(timer => timer.delay === 200 && timer.fired).length)
    request.resume()
    request.on('end', () => {
      response.writeHead(200)
      response.write('x')
    })
  })
  endless.on('connection', socket => {
    open.add(socket)
    socket.on('close', () => open.delete(socket))
  })
  await new Promise<void>(resolve => endless.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    endless.closeAllConnections()
    endless.close(() => resolve())
  }))
  const { port } = endless.address() as AddressInfo
  const { url, sender, reports } = await setup(t, undefined, { timeout: 200 })
  const task = (await result(url, 'SendMessage', {
    message: userMessage('hello'),
    configuration: { taskPushNotificationConfig: { id: 'endless', url: `http://127.0.0.1:${port}/endless` } }
  })).task
  await sender.idle()
  t.same(reports, ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'].map(event =>
    ({ outcome: 'delivered', taskId: task.id, configId: 'endless', tenant: '', event, attempts: 1, status: 200 })),
  'each event delivered once, on its 2xx, and not retried')
  t.same(deadlinesPassed, [0, 1, 2, 3], 'each delivery began once the attempt before it had ended at its deadline')
  await eventually(() => open.size === 0, 1000)
  t.equal(open.size, 0, 'every socket was destroyed at the deadline')
})

t.test('the attempt timeout still fires when a garbage collection runs meanwhile (nodejs/node#57736)', async t => {
  // gc() without --expose-gc on the command line: a flag set at run time, read in a new context.
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const never = new Promise<number>(() => {})
  // 1 s: the collections below fall within the first attempt, and a loaded machine's second
  // attempt still gets its answer in time (at 200 ms it was sometimes a third).
  const { receiver, url, sender, reports } = await setup(t, (_path, n) => n === 1 ? never : 200, { timeout: 1000 })
  await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/gc` } } })
  await eventually(() => receiver.bodies('/gc').length === 1)
  for (let i = 0; i < 5; i++) {
    gc()
    await sleep(20)
  }
  // With AbortSignal.timeout inside AbortSignal.any the first attempt never ended: idle() never resolved.
  const outcome = await Promise.race([sender.idle().then(() => 'idle'), sleep(10_000, 'stuck')])
  t.equal(outcome, 'idle')
  t.same(reports[0], { outcome: 'delivered', attempts: 2, status: 200, taskId: reports[0]?.taskId, configId: reports[0]?.configId, tenant: '', event: 'task' })
})

t.test('past maxQueued, the longest queue drops its oldest waiting delivery: the newest, the final status, still arrives', async t => {
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, url, sender, reports } = await setup(t, () => held, { maxQueued: 2 })
  const done = (await result(url, 'SendMessage', { message: userMessage('stream 3'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/held` } } })).task
  await eventually(() => sender.stats.dropped === 4)
  release()
  await sender.idle()
  const bodies = receiver.bodies('/held')
  t.same(bodies.map(body => Object.keys(body)[0]), ['task', 'statusUpdate'], 'the first event, in flight, then the last')
  t.same(bodies[1].statusUpdate.status, done.status, 'the last is the final status')
  t.same(reports.map(r => [r.event, r.outcome]), [
    ['statusUpdate', 'dropped'], ['artifactUpdate', 'dropped'], ['artifactUpdate', 'dropped'], ['artifactUpdate', 'dropped'],
    ['task', 'delivered'], ['statusUpdate', 'delivered']
  ], 'each drop the oldest waiting: WORKING, then the chunks in order')
  t.equal(reports[0]?.reason, 'queue full')
  t.same(sender.stats, { delivered: 2, failed: 0, refused: 0, dropped: 4 })
})

/**
 * A sender of the test's own, with no HTTP: each task has one config; the outbox names each
 * delivery by task and event (`A1`), holds the attempts until `release()`, then takes every
 * delivery over (owns answers false), so each ends without a request. Its calls tell which
 * deliveries were attempted (`owned`) and which dropped (`finished`), in order.
 */
function offlineSender (t: Test, maxQueued: number) {
  let release!: () => void
  const released = new Promise<boolean>(resolve => { release = () => resolve(false) })
  const owned: string[] = []
  const finished: string[] = []
  const reports: PushDeliveryReport[] = []
  const store: PushConfigStore = {
    set: async () => {},
    get: async () => undefined,
    list: async (taskId) => ({ configs: [{ id: 'hook', taskId, url: 'http://127.0.0.1:9/' }], nextPageToken: '' }),
    delete: async () => {}
  }
  const outbox: PushOutbox = {
    record: async (ref, event) => [`${ref.taskId}${event.message?.messageId}`],
    behind: async () => [],
    owns: (id) => {
      owned.push(id)
      return released
    },
    finish: async (id) => { finished.push(id) }
  }
  const sender = new PushSender(store, { ...PUSH_DEFAULTS, maxQueued, onDelivery: report => reports.push(report) }, { error () {}, warn () {} }, outbox)
  t.teardown(() => sender.close())
  /** Queues event `n` of `taskId`. */
  const notify = (taskId: string, n: number) => {
    sender.notify({ message: { messageId: String(n), role: 'ROLE_AGENT', parts: [{ text: String(n) }] } }, { taskId, contextId: 'c', scope: { tenant: '' } })
  }
  return { sender, notify, release, owned, finished, reports }
}

t.test('queues full: the longest drops its oldest waiting delivery, the first made of the longest on a tie; what stays goes in order', async t => {
  const { sender, notify, release, owned, finished, reports } = offlineSender(t, 6)
  const steps: Array<[string, number]> = [
    ['A', 1], ['A', 2], ['A', 3], ['A', 4], ['B', 1], ['B', 2], // 6 queued: A1 and B1 attempted, A2–A4 and B2 waiting
    ['B', 3], // A has 3 waiting, B 1: A2 goes
    ['B', 4], // A 2, B 2, a tie: A, made first, loses A3
    ['B', 5], // A 1, B 3: B2
    ['C', 1], // B3; C1 is attempted at once
    ['A', 5], // A 1, B 2, C 0: B4
    ['A', 6], // A 2, B 1: A4
    ['C', 2], // A 2: A5
    ['C', 3] // A 1, B 1, C 1, a three-way tie: A6
  ]
  for (const [taskId, n] of steps) {
    notify(taskId, n)
    await sender.recorded({ tenant: '', taskId })
  }
  t.same(owned, ['A1', 'B1', 'C1'], 'the first of each queue is attempted; nothing else yet')
  t.same(finished, ['A2', 'A3', 'B2', 'B3', 'B4', 'A4', 'A5', 'A6'], 'the deliveries dropped, in order')
  t.same(reports.map(r => [r.taskId, r.outcome, r.reason, r.attempts]), finished.map(id => [id[0], 'dropped', 'queue full', 0]), 'each reported')
  release()
  await sender.idle()
  t.same(owned.slice(3).sort(), ['B5', 'C2', 'C3'], 'what was left waiting is attempted')
  t.same(owned.filter(id => id[0] === 'C'), ['C1', 'C2', 'C3'], 'in its order')
  t.equal(reports.length, finished.length, 'taken over: no report more')
})

t.test('a raised maxQueued, 40,000 events for a held webhook: the 10,000 oldest waiting dropped, the rest attempted in order, none by Array shift() or splice()', async t => {
  const { sender, notify, release, owned, finished, reports } = offlineSender(t, 30_000)
  // Array.prototype.shift() and splice() copy the array behind the item taken out: a queue of
  // 30,000 is not to be drained with them (on a short array they are cheap, and allowed).
  const { shift, splice } = Array.prototype
  let longest = 0
  Array.prototype.shift = function (this: unknown[]) {
    longest = Math.max(longest, this.length)
    return shift.call(this)
  }
  Array.prototype.splice = function (this: unknown[], ...args: Parameters<typeof splice>) {
    longest = Math.max(longest, this.length)
    return splice.apply(this, args)
  }
  try {
    for (let n = 0; n < 40_000; n++) notify('A', n)
    await sender.recorded({ tenant: '', taskId: 'A' })
    release()
    await sender.idle()
  } finally {
    Array.prototype.shift = shift
    Array.prototype.splice = splice
  }
  t.equal(reports.length, 10_000)
  t.ok(reports.every(r => r.outcome === 'dropped' && r.reason === 'queue full'), 'each drop reported')
  const named = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `A${from + i}`)
  t.ok(finished.length === 10_000 && finished.every((id, i) => id === `A${i + 1}`), 'dropped: A1 to A10000, oldest first')
  const expected = ['A0', ...named(10_001, 40_000)]
  t.ok(owned.length === expected.length && owned.every((id, i) => id === expected[i]), 'attempted: A0, in flight, then A10001 to A39999 in order')
  t.ok(longest <= 100, `the longest array shift() or splice() was called on held ${longest}`)
})

// A webhook that never answers fills the shared queue with its own task's events; another
// tenant's config must still get its turn, at the hog's expense.
t.test('one dead webhook cannot take the queue from other configs: it loses its own oldest events', async t => {
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, url, sender, reports } = await setup(t, path => path === '/dead' ? held : 200, { maxQueued: 10 })
  await result(url, 'SendMessage', { message: userMessage('stream 30'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/dead` } } })
  await eventually(() => sender.stats.dropped > 0)
  const victim = (await result(url, 'SendMessage', { tenant: 'victim', message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/victim` } } })).task
  // Reported, not only received: a body reaches the receiver before the sender reads its 200.
  await eventually(() => reports.filter(r => r.tenant === 'victim').length === 4)
  t.same(receiver.bodies('/victim').map(body => Object.keys(body)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.same(receiver.bodies('/victim')[3].statusUpdate.status, victim.status)
  t.same(reports.filter(r => r.tenant === 'victim').map(r => r.outcome), ['delivered', 'delivered', 'delivered', 'delivered'], 'none of the victim\'s dropped')
  t.ok(reports.filter(r => r.tenant === '').every(r => r.outcome === 'dropped'), 'every drop was the dead webhook\'s own')
  release()
  await sender.idle()
  const last = receiver.bodies('/dead').at(-1)
  t.equal(last.statusUpdate?.status.state, 'TASK_STATE_COMPLETED', 'the dead webhook, back, still gets its task\'s final status')
})

t.test('the event stream never waits for a webhook', async t => {
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, url, sender } = await setup(t, () => held)
  const done = await result(url, 'SendMessage', { message: userMessage('stream 2'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/held` } } })
  t.equal(done.task.status.state, 'TASK_STATE_COMPLETED', 'the task completed while its first delivery was still held')
  await eventually(() => receiver.received.length === 1)
  t.equal(sender.stats.delivered, 0, 'nothing acknowledged yet')
  release()
  await sender.idle()
  t.equal(receiver.received.length, 5)
})

/** A sender of the test's own for `receiver`: every task has one config, `hook`, posting to `path`. */
function senderFor (t: Test, receiver: { origin: string }, path: (taskId: string) => string) {
  const reports: PushDeliveryReport[] = []
  const config = (taskId: string) => ({ id: 'hook', taskId, url: `${receiver.origin}${path(taskId)}` })
  const store: PushConfigStore = {
    set: async () => {},
    get: async (taskId) => config(taskId),
    list: async (taskId) => ({ configs: [config(taskId)], nextPageToken: '' }),
    delete: async () => {}
  }
  const sender = new PushSender(store, { ...PUSH_DEFAULTS, allow: ['127.0.0.1'], onDelivery: report => reports.push(report) }, { error () {}, warn () {} })
  t.teardown(() => sender.close())
  const notify = (taskId: string) => sender.notify({ message: { messageId: taskId, role: 'ROLE_AGENT', parts: [{ text: taskId }] } }, { taskId, contextId: 'c', scope: { tenant: '' } })
  return { sender, reports, notify }
}

t.test('idle() under steady traffic resolves once what was notified before it has settled, not once nothing is pending', async t => {
  // Each delivery takes 50 ms and a new task's event comes every 5 ms: some are always in flight.
  const receiver = await startReceiver(() => sleep(50).then(() => 200))
  t.teardown(() => receiver.close())
  const { sender, reports, notify } = senderFor(t, receiver, () => '/steady')
  let notified = 0
  const traffic = setInterval(() => notify(`T${notified++}`), 5)
  t.teardown(() => clearInterval(traffic))
  await eventually(() => reports.length >= 10)
  const before = notified
  const outcome = await Promise.race([sender.idle().then(() => 'idle'), sleep(5_000, 'stuck')])
  const settled = new Set(reports.map(report => report.taskId))
  clearInterval(traffic)
  t.equal(outcome, 'idle', 'it resolved while the traffic went on')
  t.ok(Array.from({ length: before }, (_, n) => `T${n}`).every(taskId => settled.has(taskId)), `each of the ${before} events notified before the call was reported by then`)
  await sender.idle()
  t.equal(reports.length, notified, 'every event delivered once the traffic stopped')
  t.ok(reports.every(report => report.outcome === 'delivered'))
})

t.test('idle() waits for what was notified before it, an earlier idle() call\'s share included, however the deliveries end', async t => {
  const held = new Map<string, () => void>()
  const receiver = await startReceiver(path => new Promise<number>(resolve => held.set(path, () => resolve(200))))
  t.teardown(() => receiver.close())
  const { sender, reports, notify } = senderFor(t, receiver, taskId => `/${taskId}`)
  const resolved: string[] = []
  notify('A')
  void sender.idle().then(() => resolved.push('first'))
  void sender.idle().then(() => resolved.push('again')) // nothing notified in between
  notify('B')
  void sender.idle().then(() => resolved.push('second'))
  await eventually(() => held.size === 2)
  held.get('/B')?.()
  await eventually(() => reports.length === 1)
  await sleep(50)
  t.same(resolved, [], 'B delivered: the second call still waits for A, notified before it too')
  t.equal(sender.pending, 1)
  held.get('/A')?.()
  await eventually(() => resolved.length === 3)
  t.same(resolved, ['first', 'again', 'second'])
  t.equal(sender.pending, 0)
  t.same(reports.map(report => [report.taskId, report.outcome]), [['B', 'delivered'], ['A', 'delivered']])
})

t.test('a dozen deliveries in flight at once print no MaxListenersExceededWarning', async t => {
  const warnings = processWarnings(t)
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, url, sender } = await setup(t, () => held)
  const tasks = 12
  for (let i = 0; i < tasks; i++) {
    await result(url, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/held` } } })
  }
  await eventually(() => receiver.received.length === tasks)
  // A warning is emitted on the next tick: let it come.
  await new Promise(resolve => setImmediate(resolve))
  t.same(warnings, [], `${tasks} attempts, one per config, each waiting on the closing signal`)
  release()
  await sender.idle()
  t.equal(sender.stats.delivered, tasks * 4)
})

// Each config's deliveries wait in a queue of their own. Tenant `a` and tenant `a\0t1` can name
// a task and a config so that tenant, task id and config id, joined with NULs, spell the same
// string: the queues must still be two, or one tenant's slow webhook would hold up the other's.
// Requests cannot carry a NUL in those (test/keys.test.ts): the sender is driven directly.
t.test('no two configs share a delivery queue, whatever NULs tenants and ids hold', async t => {
  let release!: () => void
  const held = new Promise<number>(resolve => { release = () => resolve(200) })
  const { receiver, server, sender } = await setup(t, path => path === '/held' ? held : 200)
  const store = server.fastify.a2a.pushConfigStore
  const first = { taskId: 't1', contextId: 'c1', scope: { tenant: 'a' } }
  const second = { taskId: 't2', contextId: 'c2', scope: { tenant: 'a\u0000t1' } }
  await store.set({ id: 'c', taskId: 't2', url: `${receiver.origin}/held` }, second.scope)
  await store.set({ id: 't2\u0000c', taskId: 't1', url: `${receiver.origin}/free` }, first.scope)
  const working = (ref: typeof first, text: string) => ({
    statusUpdate: { taskId: ref.taskId, contextId: ref.contextId, status: { state: 'TASK_STATE_WORKING' as const, message: { messageId: text, role: 'ROLE_AGENT' as const, parts: [{ text }] } } }
  })
  sender.notify(working(second, 'held 1'), second)
  sender.notify(working(second, 'held 2'), second)
  await eventually(() => receiver.bodies('/held').length === 1)
  sender.notify(working(first, 'free 1'), first)
  sender.notify(working(first, 'free 2'), first)
  await eventually(() => receiver.bodies('/free').length === 2)
  t.same(receiver.bodies('/free'), [working(first, 'free 1'), working(first, 'free 2')], "tenant a's config got its events while the other tenant's webhook still held its first")
  t.equal(receiver.bodies('/held').length, 1, 'the held webhook still on its first delivery')
  release()
  await sender.idle()
  t.same(receiver.bodies('/held'), [working(second, 'held 1'), working(second, 'held 2')], 'the held queue went on once released')
})

t.test('closing the server drops what is still queued after taskGrace', async t => {
  // The first attempt is held until the close begins, then answered 503: its retry, made
  // during the grace, is held for good.
  let closeBegan!: () => void
  const closing = new Promise<number>(resolve => { closeBegan = () => resolve(503) })
  const receiver = await startReceiver((_path, n) => n === 1 ? closing : new Promise<number>(() => {}))
  t.teardown(() => receiver.close())
  const reports: PushDeliveryReport[] = []
  const server = await startServer({ push: { allow: ['127.0.0.1'], retryDelay: 1, onDelivery: report => reports.push(report) }, shutdown: { taskGrace: 500 } })
  await result(server.endpoint, 'SendMessage', { message: userMessage('hello'), configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/x` } } })
  await eventually(() => receiver.received.length === 1)
  const sender = server.fastify.a2a.push as PushSender
  const closed = server.close()
  closeBegan()
  await closed
  t.equal(receiver.received.length, 2, 'the deliveries went on during the grace: the first event was tried again')
  await sender.idle()
  t.same(reports.map(r => [r.event, r.outcome, r.reason, r.attempts]), [
    ['task', 'dropped', 'closing', 2], ['statusUpdate', 'dropped', 'closing', 0], ['artifactUpdate', 'dropped', 'closing', 0], ['statusUpdate', 'dropped', 'closing', 0]
  ], 'at the end of the grace the attempt in flight and the queued events were dropped')
})

for (const outboxed of [false, true]) {
  t.test(`closing while an event's configs are being read: its delivery is ${outboxed ? 'left in the outbox, unreported' : 'dropped, closing'}`, async t => {
    let listed!: () => void
    const listing = new Promise<void>(resolve => { listed = resolve })
    const reports: PushDeliveryReport[] = []
    const finished: string[] = []
    const store: PushConfigStore = {
      set: async () => {},
      get: async () => undefined,
      list: async (taskId) => {
        await listing
        return { configs: [{ id: 'hook', taskId, url: 'http://127.0.0.1:9/' }], nextPageToken: '' }
      },
      delete: async () => {}
    }
    const outbox: PushOutbox = {
      record: async (ref) => [`${ref.taskId}-hook`],
      behind: async () => [],
      owns: async () => true,
      finish: async (id) => { finished.push(id) }
    }
    const sender = new PushSender(store, { ...PUSH_DEFAULTS, onDelivery: report => reports.push(report) }, { error () {}, warn () {} }, outboxed ? outbox : undefined)
    sender.notify({ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'm' }] } }, { taskId: 'T', contextId: 'c', scope: { tenant: '' } })
    sender.close()
    listed()
    await sender.idle()
    t.same(reports, outboxed
      ? []
      : [{ outcome: 'dropped', taskId: 'T', configId: 'hook', tenant: '', event: 'message', attempts: 0, reason: 'closing' }])
    t.same(finished, [], outboxed ? 'its record stays, for another instance to deliver and report' : 'no outbox')
    t.equal(sender.stats.dropped, outboxed ? 0 : 1)
  })
}

t.test('shutdown: the push deliveries of a task\'s last events get taskGrace, so its final status reaches the webhook', async t => {
  const receiver = await startReceiver(() => sleep(150).then(() => 200))
  t.teardown(() => receiver.close())
  const reports: PushDeliveryReport[] = []
  const server = await startServer({ push: { allow: ['127.0.0.1'], onDelivery: report => reports.push(report) } })
  const task = (await result(server.endpoint, 'SendMessage', {
    message: userMessage('sleep 300'), configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.origin}/x` } }
  })).task
  await server.close()
  const last = receiver.bodies('/x').at(-1)
  t.equal(last.statusUpdate?.status.state, 'TASK_STATE_COMPLETED', 'the final status was delivered before the server closed')
  t.equal(last.statusUpdate?.taskId, task.id)
  t.ok(reports.every(r => r.outcome === 'delivered'), 'nothing dropped')
  t.same(server.fastify.a2a.lastShutdownReport?.drained, 1)
})

t.test('failures are logged without the URL, the token or the credentials', async t => {
  const receiver = await startReceiver(() => 400)
  t.teardown(() => receiver.close())
  const { stream: logStream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'warn', stream: logStream } })
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, push: { allow: ['127.0.0.1'] } })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => fastify.close())
  const address = fastify.server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  await result(url, 'SendMessage', {
    message: userMessage('fail'),
    configuration: { taskPushNotificationConfig: { url: `${receiver.origin}/secret-path`, token: 'very-secret-token', authentication: { scheme: 'Bearer', credentials: 'very-secret-credentials' } } }
  })
  await (fastify.a2a.push as PushSender).idle()
  const log = lines.join('')
  t.match(log, /push delivery failed/)
  t.match(log, /HTTP 400/)
  t.notMatch(log, /very-secret-token/)
  t.notMatch(log, /very-secret-credentials/)
  t.notMatch(log, /secret-path/)
})

t.test('a replaced config takes effect for the events that follow', async t => {
  const { receiver, url, sender } = await setup(t)
  const task = (await result(url, 'SendMessage', { message: userMessage('input') })).task
  await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'c', url: `${receiver.origin}/old` })
  await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'c', url: `${receiver.origin}/new`, token: 'new-token' })
  await result(url, 'SendMessage', { message: userMessage('go', { taskId: task.id }) })
  await sender.idle()
  t.equal(receiver.bodies('/old').length, 0)
  t.equal(receiver.bodies('/new').length, 2)
  t.ok(receiver.received.every(r => r.headers['x-a2a-notification-token'] === 'new-token'))
})
