import { isTerminal } from '../handler/states.js';
export function splitArtifact(artifact) {
    const { artifactId: _id, parts, metadata, ...fields } = artifact;
    return { fields, chunk: metadata === undefined ? { parts } : { parts, metadata } };
}
/** An artifact from its fields and its chunks in write order; metadata patches merge shallowly, as in memory. */
export function joinArtifact(artifactId, fields, chunks) {
    const artifact = { artifactId, ...fields, parts: chunks.flatMap(chunk => chunk.parts) };
    const patches = chunks.filter(chunk => chunk.metadata !== undefined);
    if (patches.length > 0)
        artifact.metadata = Object.assign({}, ...patches.map(chunk => chunk.metadata));
    return artifact;
}
/** The ListTasks sort key: the status timestamp in ms, or now when the status has none. */
export function statusTime(status, now) {
    return Date.parse(status.timestamp ?? '') || now;
}
/** When a task in this status stops being visible: `null` (never) unless it is terminal and a TTL is set. */
export function expiry(status, now, ttl) {
    return ttl !== undefined && isTerminal(status.state) ? now + ttl : null;
}
export function joinTask(row) {
    const task = { id: row.id, status: row.status };
    if (row.contextId !== null)
        task.contextId = row.contextId;
    if (row.artifacts.length > 0)
        task.artifacts = row.artifacts;
    if (row.history !== undefined && row.history.length > 0)
        task.history = row.history;
    if (row.metadata !== null)
        task.metadata = row.metadata;
    return task;
}
export const UNFINISHED_STATES = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'];
//# sourceMappingURL=rows.js.map