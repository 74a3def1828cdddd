// A stream across instances whose task ends while the bus of the stream's instance has lost its
// connection: two servers share a memory store, each on its own bus; a task runs on A and B
// streams it (SubscribeToTask). Run against each bus across instances (test/bus-*.test.ts).
import type { Test } from 'tap'
import { MemoryPushConfigStore, MemoryTaskStore, type AgentExecutor, type EventBus } from '../../lib/index.js'
import { openSse, result, startServer, userMessage, type SseEvent } from './server.js'

/**
 * `lose()` makes B's bus lose its connection, and resolves once it has (the bus makes it again by
 * itself, or once `regain()` lets it). The task's artifact and COMPLETED are stored and published
 * meanwhile. Resolves with B's stream's events once it ended, or after `ms`.
 */
export async function streamAcrossGap (
  t: Test, busA: EventBus, busB: EventBus, lose: () => Promise<void>, regain: () => void = () => {}, ms = 8000
): Promise<{ events: SseEvent[], ended: boolean }> {
  let finish!: () => void
  const finished = new Promise<void>(resolve => { finish = resolve })
  const executor: AgentExecutor = {
    async execute (_context, events) {
      await events.working()
      await finished
      await events.artifact({ artifactId: 'out', parts: [{ text: 'done' }] })
      await events.completed()
    }
  }
  const shared = { executor, taskStore: new MemoryTaskStore(), pushConfigStore: new MemoryPushConfigStore(), shutdown: { completionGrace: 50, taskGrace: 50 } }
  const a = await startServer({ ...shared, bus: busA })
  const b = await startServer({ ...shared, bus: busB })
  t.teardown(async () => {
    finish()
    await a.close()
    await b.close()
  })
  const { task } = await result(a.endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
  const stream = await openSse(b.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  await lose()
  finish()
  // Stored on A, and published while B's bus is away.
  for (;;) {
    if ((await result(a.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_COMPLETED') break
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  regain()
  let timer: NodeJS.Timeout | undefined
  const ended = await Promise.race([stream.ended.then(() => true), new Promise<boolean>(resolve => { timer = setTimeout(resolve, ms, false) })])
  clearTimeout(timer)
  if (!ended) stream.disconnect()
  return { events: stream.events, ended }
}
