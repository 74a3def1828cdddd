// Two turns of one task on two instances: a later message to a running task reaches another
// instance than the one running it. The later turn's executor returning without a final state
// leaves the task to the instance still running it, as on one instance (where the running
// execution keeps it); that instance then ends it.
import t from 'tap'
import type { AgentExecutor } from '../lib/index.js'
import { testCluster } from './helpers/cluster-core.js'
import { eventually, result, userMessage } from './helpers/server.js'

const cluster = await testCluster(t)
if (cluster !== undefined) {
  let release!: () => void
  const released = new Promise<void>(resolve => { release = resolve })
  const executor: AgentExecutor = {
    async execute (context, events) {
      // The first turn works until the test lets it complete; a later one only reads its message.
      if (context.task !== undefined) return
      await events.working()
      await released
      await events.completed('done')
    }
  }
  const a = await cluster.start({ options: { executor } })
  const b = await cluster.start({ options: { executor } })

  t.test('a later turn on another instance ends without a final state: the task runs on, and the first turn completes it', async t => {
    const { task } = await result(a.endpoint, 'SendMessage', { message: userMessage('first'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(a.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')

    const later = await result(b.endpoint, 'SendMessage', { message: userMessage('more', { taskId: task.id }) })
    t.equal(later.task.status.state, 'TASK_STATE_WORKING', 'B answers with the task still running: not FAILED')
    t.same(later.task.history.map((message: { parts: Array<{ text: string }> }) => message.parts[0]?.text), ['first', 'more'])
    await eventually(() => b.fastify.a2a.handler.runningExecutions === 0)
    t.equal((await result(b.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_WORKING', 'as stored')

    release()
    await eventually(async () => (await result(b.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_COMPLETED')
    const done = await result(a.endpoint, 'GetTask', { id: task.id })
    t.same(done.status.message.parts, [{ text: 'done' }], 'A ended it, as its executor said')
    t.equal(a.fastify.a2a.handler.ignoredEvents, 0, "none of A's events was refused")
  })
}
