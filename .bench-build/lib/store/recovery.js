// Start-up recovery: a task left SUBMITTED or WORKING in a durable store belonged to a
// process that died, and no executor will ever finish it. It is marked FAILED with a
// status message saying why, so clients polling or subscribing see an end.
import { randomUUID } from 'node:crypto';
export const RECOVERY_MESSAGE = 'the server restarted while this task was running';
/** Fails every unfinished task; `notify` gets each one's status event (push delivery). Returns how many. */
export async function failUnfinishedTasks(taskStore, notify = () => { }) {
    if (taskStore.listUnfinished === undefined)
        return 0;
    const unfinished = await taskStore.listUnfinished();
    for (const task of unfinished) {
        const { taskId, contextId, scope } = task;
        const message = { messageId: randomUUID(), role: 'ROLE_AGENT', parts: [{ text: RECOVERY_MESSAGE }], taskId, contextId };
        const status = { state: 'TASK_STATE_FAILED', message, timestamp: new Date().toISOString() };
        await taskStore.update(taskId, { kind: 'history', message }, scope);
        await taskStore.update(taskId, { kind: 'status', status }, scope);
        notify({ statusUpdate: { taskId, contextId, status } }, task);
    }
    return unfinished.length;
}
//# sourceMappingURL=recovery.js.map