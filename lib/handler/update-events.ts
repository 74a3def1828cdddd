// The status and artifact events an executor's turn publishes, made by constructors rather
// than object literals. V8 allocates a literal's objects straight into the old generation once
// most of them have outlived a scavenge, and keeps doing so for the life of the process. A
// stream's events outlive one while its reader catches up (a slow client, a server warming up),
// and every later event of every stream was then garbage for a mark-compact to collect: three
// times the bytes a streamed chunk keeps (bench/README.md). Objects made by `new` start young.
import type { Artifact, StreamResponse, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent } from '../schema/wire.js'

class StatusUpdate implements TaskStatusUpdateEvent {
  constructor (readonly taskId: string, readonly contextId: string, readonly status: TaskStatus) {}
}

class ArtifactUpdate implements TaskArtifactUpdateEvent {
  // Set only when true: the wire leaves them out otherwise, and `declare` emits no field.
  declare append?: boolean
  declare lastChunk?: boolean

  constructor (readonly taskId: string, readonly contextId: string, readonly artifact: Artifact) {}
}

class StatusUpdateEvent {
  readonly statusUpdate: TaskStatusUpdateEvent

  constructor (taskId: string, contextId: string, status: TaskStatus) {
    this.statusUpdate = new StatusUpdate(taskId, contextId, status)
  }
}

class ArtifactUpdateEvent {
  readonly artifactUpdate: TaskArtifactUpdateEvent

  constructor (taskId: string, contextId: string, artifact: Artifact, append: boolean, lastChunk: boolean) {
    const update = new ArtifactUpdate(taskId, contextId, artifact)
    if (append) update.append = true
    if (lastChunk) update.lastChunk = true
    this.artifactUpdate = update
  }
}

export function statusUpdateEvent (taskId: string, contextId: string, status: TaskStatus): StreamResponse {
  return new StatusUpdateEvent(taskId, contextId, status)
}

export function artifactUpdateEvent (taskId: string, contextId: string, artifact: Artifact, append: boolean, lastChunk: boolean): StreamResponse {
  return new ArtifactUpdateEvent(taskId, contextId, artifact, append, lastChunk)
}
