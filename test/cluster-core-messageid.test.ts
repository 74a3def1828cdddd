// SendMessage deduplicated by messageId across instances (a retry after a dropped
// connection may reach another instance): a resend attaches to the turn the first sending
// started, wherever it runs, and never starts a second task.
import t from 'tap'
import { overrideStore, testCluster } from './helpers/cluster-core.js'
import { call, eventually, result, stream, userMessage } from './helpers/server.js'

const cluster = await testCluster(t)
if (cluster !== undefined) {
  const a = await cluster.start()
  const b = await cluster.start()
  /** An instance whose snapshot reads fail while `snapshotsFail` is set. */
  let snapshotsFail = false
  const c = await cluster.start({
    wrapTaskStore: store => overrideStore(store, {
      async getVersioned (id, scope) {
        if (snapshotsFail) throw new Error('store down')
        return await store.getVersioned?.(id, scope)
      }
    })
  })
  let contexts = 0
  /** A message in a context of its own, so ListTasks counts the tasks it started. */
  const isolated = (text: string) => userMessage(text, { contextId: `ctx-${++contexts}` })
  const tasksIn = async (contextId: string) => (await result(b.endpoint, 'ListTasks', { contextId })).tasks

  t.test('sent to A, resent to B while it runs: one task; B answers when the turn ends, as A does', async t => {
    const message = isolated('sleep 300')
    const fromA = call(a.endpoint, 'SendMessage', { message })
    await eventually(async () => (await tasksIn(message.contextId as string)).length === 1)
    const fromB = await result(b.endpoint, 'SendMessage', { message })
    t.equal(fromB.task.status.state, 'TASK_STATE_COMPLETED')
    t.same(fromB, (await fromA).result, 'the same answer')
    t.equal((await tasksIn(message.contextId as string)).length, 1, 'no second task')
  })

  t.test('resent after the turn ended: the task as it ended; with returnImmediately too', async t => {
    const message = isolated('hello')
    const first = await result(a.endpoint, 'SendMessage', { message })
    t.same(await result(b.endpoint, 'SendMessage', { message }), first)
    t.same(await result(a.endpoint, 'SendMessage', { message, configuration: { returnImmediately: true } }), first, 'to the same instance, at once')
    t.equal((await tasksIn(message.contextId as string)).length, 1)
  })

  t.test('SendStreamingMessage resent to B: the task as it is, then the rest of the turn', async t => {
    const message = isolated('sleep 1500')
    const fromA = stream(a.endpoint, 'SendStreamingMessage', { message })
    await eventually(async () => (await tasksIn(message.contextId as string))[0]?.status.state === 'TASK_STATE_WORKING')
    const fromB = (await stream(b.endpoint, 'SendStreamingMessage', { message })).events.map(event => event.data.result)
    const onA = (await fromA).events.map(event => event.data.result)
    t.same(onA.map(event => Object.keys(event)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
    t.equal(fromB[0].task.id, onA[0].task.id)
    t.equal(fromB[0].task.status.state, 'TASK_STATE_WORKING', 'the snapshot first')
    t.same(fromB.slice(1), onA.slice(2), 'then the events A sent after it')
    t.equal((await tasksIn(message.contextId as string)).length, 1)
  })

  t.test('a resend whose snapshot cannot be read: an error, and no stream or bus listener left behind', async t => {
    const message = isolated('sleep 1000')
    const fromA = call(a.endpoint, 'SendMessage', { message })
    await eventually(async () => (await tasksIn(message.contextId as string)).length === 1)
    snapshotsFail = true
    t.teardown(() => { snapshotsFail = false })
    const refused = await stream(c.endpoint, 'SendStreamingMessage', { message })
    t.equal(refused.body.error.code, -32603)
    t.equal(c.fastify.a2a.handler.openStreams, 0, 'the stream is closed')
    t.equal(c.fastify.a2a.bus.listenerCount(), 0, 'its bus listener is removed')
    t.equal((await fromA).result.task.status.state, 'TASK_STATE_COMPLETED')
  })

  t.test('a message continuing a task, resent after it completed the task: that task, not a refusal', async t => {
    const { task } = await result(a.endpoint, 'SendMessage', { message: isolated('input') })
    t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
    const answer = userMessage('more', { taskId: task.id })
    const completed = await result(a.endpoint, 'SendMessage', { message: answer })
    t.equal(completed.task.status.state, 'TASK_STATE_COMPLETED')
    t.same(await result(b.endpoint, 'SendMessage', { message: answer }), completed)
  })

  t.test('a refused message is not remembered: its resend is refused alike', async t => {
    const { task } = await result(a.endpoint, 'SendMessage', { message: isolated('hello') })
    const late = userMessage('again', { taskId: task.id })
    const refused = await call(a.endpoint, 'SendMessage', { message: late })
    t.equal(refused.error.code, -32004)
    t.same((await call(b.endpoint, 'SendMessage', { message: late })).error, refused.error)
  })

  t.test('a direct reply leaves no task to attach to: its resend is answered again', async t => {
    const message = isolated('message hi')
    const first = await result(a.endpoint, 'SendMessage', { message })
    t.same(first.message.parts, [{ text: 'hi' }])
    const again = await result(b.endpoint, 'SendMessage', { message })
    t.same(again.message.parts, [{ text: 'hi' }])
    t.equal((await tasksIn(message.contextId as string)).length, 0)
  })
}
