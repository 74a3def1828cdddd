const terminal = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
const interrupted = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);
/** Nothing leaves a terminal state. */
export const isTerminal = (state) => terminal.has(state);
/** The task waits for the client (or for credentials) and resumes on the next message. */
export const isInterrupted = (state) => interrupted.has(state);
//# sourceMappingURL=states.js.map