// Durability: the conformance agent runs as a child process on a SQLite file, then on
// PostgreSQL; it acknowledges tasks (one waiting for input, one with push configs, one
// held WORKING, one streamed), is killed with SIGKILL, and restarts on the same store.
// Every acknowledged task and config is there with its last state, the waiting task
// completes on the next message, and the task that was WORKING is FAILED with a status
// message instead of WORKING forever.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { RECOVERY_MESSAGE } from '../lib/index.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { startAgentProcess, type AgentProcess } from './helpers/agent-process.js'
import { eventually, result, userMessage } from './helpers/server.js'
import { startReceiver, type Receiver } from './helpers/webhook.js'

/** The compiled conformance agent on the given store, killed at teardown if still running. */
async function startAgent (t: Test, store: string): Promise<AgentProcess & { url: string }> {
  const agent = await startAgentProcess({ A2A_STORE: store })
  t.teardown(() => { if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGKILL') })
  return { ...agent, url: agent.origin }
}

async function survivesSigkill (t: Test, store: string) {
  const receiver: Receiver = await startReceiver()
  t.teardown(() => receiver.close())

  // ---- first life: acknowledge tasks --------------------------------------------------
  const first = await startAgent(t, store)
  const waiting = (await result(first.url, 'SendMessage', { message: userMessage('input') })).task
  t.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED')
  const configA = await result(first.url, 'CreateTaskPushNotificationConfig', {
    taskId: waiting.id, id: 'a', url: `${receiver.origin}/a`, token: 'tok-a', authentication: { scheme: 'Bearer', credentials: 'cred-a' }
  })
  const configB = await result(first.url, 'CreateTaskPushNotificationConfig', { taskId: waiting.id, url: `${receiver.origin}/b` })
  const done = (await result(first.url, 'SendMessage', { message: userMessage('hello') })).task
  const streamed = (await result(first.url, 'SendMessage', { message: userMessage('stream 5') })).task
  const held = (await result(first.url, 'SendMessage', {
    message: userMessage('hold'),
    configuration: { returnImmediately: true, taskPushNotificationConfig: { id: 'held', url: `${receiver.origin}/held` } }
  })).task
  await eventually(async () => (await result(first.url, 'GetTask', { id: held.id })).status.state === 'TASK_STATE_WORKING', 10_000)
  await eventually(() => receiver.bodies('/held').length === 2, 10_000)
  t.same(receiver.bodies('/held').map(body => Object.keys(body)[0]), ['task', 'statusUpdate'], 'the held task was acknowledged as WORKING')

  const before = new Map<string, unknown>()
  for (const task of [waiting, done, streamed]) before.set(task.id, await result(first.url, 'GetTask', { id: task.id }))
  const heldBefore = await result(first.url, 'GetTask', { id: held.id })

  first.child.kill('SIGKILL')
  t.same(await first.exit, { code: null, signal: 'SIGKILL' }, 'killed, no shutdown ran')

  // ---- second life: the same store ----------------------------------------------------
  const second = await startAgent(t, store)
  for (const [id, task] of before) t.same(await result(second.url, 'GetTask', { id }), task, `task ${id} is back as it was`)
  t.same((await result(second.url, 'GetTask', { id: streamed.id })).artifacts,
    [{ artifactId: 'stream', parts: [1, 2, 3, 4, 5].map(i => ({ text: `chunk ${i}` })) }], 'the streamed chunks, in order')
  // Listed by id: configB's was generated, and may sort before "a".
  t.same((await result(second.url, 'ListTaskPushNotificationConfigs', { taskId: waiting.id })).configs,
    [configA, configB].sort((x, y) => x.id < y.id ? -1 : 1), 'both configs, credentials included')
  t.same(await result(second.url, 'GetTaskPushNotificationConfig', { taskId: held.id, id: 'held' }), { id: 'held', taskId: held.id, url: `${receiver.origin}/held` })
  const listed = await result(second.url, 'ListTasks', {})
  t.equal(listed.totalSize, 4)

  const recovered = await result(second.url, 'GetTask', { id: held.id })
  t.equal(recovered.status.state, 'TASK_STATE_FAILED', 'the task that was WORKING is FAILED, not WORKING forever')
  t.same(recovered.status.message.parts, [{ text: RECOVERY_MESSAGE }])
  t.same(recovered.history, [...heldBefore.history, recovered.status.message])
  await eventually(() => receiver.bodies('/held').length === 3, 10_000)
  t.same(receiver.bodies('/held')[2], { statusUpdate: { taskId: held.id, contextId: held.contextId, status: recovered.status } }, 'its webhook was told')

  const resumed = (await result(second.url, 'SendMessage', { message: userMessage('the answer', { taskId: waiting.id }) })).task
  t.equal(resumed.status.state, 'TASK_STATE_COMPLETED', 'the waiting task completes on the next message')
  t.same(resumed.artifacts, [{ artifactId: 'echo', parts: [{ text: 'the answer' }] }])
  await eventually(() => receiver.bodies('/a').length === 2 && receiver.bodies('/b').length === 2, 10_000)
  const expected = [
    { artifactUpdate: { taskId: waiting.id, contextId: waiting.contextId, artifact: { artifactId: 'echo', parts: [{ text: 'the answer' }] } } },
    { statusUpdate: { taskId: waiting.id, contextId: waiting.contextId, status: resumed.status } }
  ]
  t.same(receiver.bodies('/a'), expected, 'the restored configs deliver')
  t.same(receiver.bodies('/b'), expected)
  t.ok(receiver.received.filter(r => r.path === '/a').every(r => r.headers.authorization === 'Bearer cred-a' && r.headers['x-a2a-notification-token'] === 'tok-a'))

  second.child.kill('SIGTERM')
  t.same(await second.exit, { code: 0, signal: null }, 'a graceful stop still works')
}

// Each store's run is mostly the child's start-up under the TypeScript loader: run both at once.
t.jobs = 2

t.test('SQLite: every acknowledged task survives SIGKILL', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'a2a-durability-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  await survivesSigkill(t, `sqlite:${join(dir, 'agent.db')}`)
})

t.test('PostgreSQL: every acknowledged task survives SIGKILL', async t => {
  const url = await requirePostgres(t)
  if (url === undefined) return
  const schema = uniqueSchema('durability')
  t.teardown(() => dropSchemas(url, [schema]))
  const store = new URL(url)
  store.searchParams.set('schema', schema)
  await survivesSigkill(t, store.href)
})
