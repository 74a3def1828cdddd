// Classes of task states (spec §10.1).
import type { TaskState } from '../schema/wire.js'

export const TERMINAL_STATES: readonly TaskState[] = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']
const terminal = new Set<TaskState>(TERMINAL_STATES)
const interrupted = new Set<TaskState>(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'])

/** Nothing leaves a terminal state. */
export const isTerminal = (state: TaskState): boolean => terminal.has(state)

/** The task waits for the client (or for credentials) and resumes on the next message. */
export const isInterrupted = (state: TaskState): boolean => interrupted.has(state)
