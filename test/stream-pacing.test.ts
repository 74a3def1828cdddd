// Pacing: an executor whose store never waits (the memory store) would emit a whole burst
// of events in one run of microtasks, faster than an SSE response can drain; while a
// stream of the task holds half of `maxQueuedEvents`, each event waits for the next turn
// of the event loop, so a reader that keeps reading gets every event. A subscriber paces
// every later turn of its task, not only the one running when it subscribed.
import t from 'tap'
import type { AgentExecutor } from '../lib/index.js'
import { call, openSse, startServer, stream, userMessage } from './helpers/server.js'

const BURST = 600

/** A new task asks for input; the message that resumes it gets BURST appended chunks, then completed. */
const burstOnResume: AgentExecutor = {
  async execute (context, events) {
    if (context.task === undefined) return events.inputRequired('more')
    for (let i = 1; i <= BURST; i++) await events.artifact({ artifactId: 'burst', parts: [{ text: `chunk ${i}` }] }, { append: i > 1 })
    return events.completed()
  }
}

const states = (events: Array<{ data: any }>) => events.map(event => event.data.result?.statusUpdate?.status.state).filter(state => state !== undefined)

t.test('a streaming turn far longer than maxQueuedEvents reaches an SSE reader whole', async t => {
  const server = await startServer({ maxQueuedEvents: 32 })
  t.teardown(() => server.close())
  const reply = await stream(server.endpoint, 'SendStreamingMessage', { message: userMessage(`stream ${BURST}`) })
  t.equal(reply.events.length, BURST + 3, 'the task, working, every chunk, completed')
  t.same(states(reply.events), ['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'])
})

t.test('a subscriber to an interrupted task gets every event of the turn that resumes it', async t => {
  const server = await startServer({ executor: burstOnResume, maxQueuedEvents: 32 })
  t.teardown(() => server.close())
  const created = await call(server.endpoint, 'SendMessage', { message: userMessage('start') })
  const task = created.result.task
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
  // The subscription has its snapshot; no change of the task is queued when the next turn starts.
  const subscriber = await openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  const resumed = await call(server.endpoint, 'SendMessage', { message: userMessage('go', { taskId: task.id }) })
  t.equal(resumed.result.task.status.state, 'TASK_STATE_COMPLETED')
  await subscriber.ended
  const { events } = subscriber
  t.same(events.filter(event => event.event === 'error'), [], 'no STREAM_LAGGED')
  t.equal(events.length, 1 + BURST + 1, 'the snapshot, every chunk, completed')
  t.same(states(events), ['TASK_STATE_COMPLETED'])
})
