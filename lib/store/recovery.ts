// Start-up recovery: a task left SUBMITTED or WORKING in a durable store belonged to a
// process that died, and no executor will ever finish it. It is marked FAILED with a
// status message saying why, so clients polling or subscribing see an end.
import { randomUUID } from 'node:crypto'
import { TaskTerminalError } from '../errors/index.js'
import type { Message, StreamResponse, TaskStatus } from '../schema/wire.js'
import type { TaskStore, UnfinishedTask } from './types.js'

export const RECOVERY_MESSAGE = 'the server restarted while this task was running'

/**
 * Fails every unfinished task; `notify` gets each one's status event (push delivery). A task
 * that ended since it was listed is left as it ended. Returns how many were failed.
 */
export async function failUnfinishedTasks (
  taskStore: TaskStore,
  notify: (event: StreamResponse, task: UnfinishedTask) => void = () => {}
): Promise<number> {
  if (taskStore.listUnfinished === undefined) return 0
  let failed = 0
  for (const task of await taskStore.listUnfinished()) {
    const { taskId, contextId, scope } = task
    const message: Message = { messageId: randomUUID(), role: 'ROLE_AGENT', parts: [{ text: RECOVERY_MESSAGE }], taskId, contextId }
    const status: TaskStatus = { state: 'TASK_STATE_FAILED', message, timestamp: new Date().toISOString() }
    try {
      await taskStore.update(taskId, { kind: 'history', message }, scope)
      await taskStore.update(taskId, { kind: 'status', status }, scope)
    } catch (error) {
      if (error instanceof TaskTerminalError) continue
      throw error
    }
    notify({ statusUpdate: { taskId, contextId, status } }, task)
    failed++
  }
  return failed
}
