// What the SQL stores share: how a task is split into rows and put back together.
// An artifact is a row of fixed fields plus an ordered list of chunks, one per write
// (its parts and its metadata patch), so an appended chunk is one inserted row.
import type { Artifact, Task, TaskStatus } from '../schema/wire.js'
import { isTerminal, TERMINAL_STATES } from '../handler/states.js'
import { spreadInto } from '../copy.js'

/** The artifact's own fields, without the id, the parts and the metadata (those live in chunks). */
export type ArtifactFields = Omit<Artifact, 'artifactId' | 'parts' | 'metadata'>

export interface Chunk {
  parts: Artifact['parts']
  metadata?: Record<string, unknown>
}

export function splitArtifact (artifact: Artifact): { fields: ArtifactFields, chunk: Chunk } {
  const { artifactId: _id, parts, metadata, ...fields } = artifact
  return { fields, chunk: metadata === undefined ? { parts } : { parts, metadata } }
}

/** An artifact from its fields and its chunks in write order; metadata patches merge shallowly, as in memory. */
export function joinArtifact (artifactId: string, fields: ArtifactFields, chunks: Chunk[]): Artifact {
  const artifact = { artifactId, ...fields, parts: chunks.flatMap(chunk => chunk.parts) } as Artifact
  const patches = chunks.filter(chunk => chunk.metadata !== undefined)
  // Key by key: Object.assign would take a patch's own `__proto__` key as the prototype.
  if (patches.length > 0) artifact.metadata = patches.reduce<Record<string, unknown>>((metadata, chunk) => spreadInto(metadata, chunk.metadata as object), {})
  return artifact
}

/** The ListTasks sort key: the status timestamp in ms, or now when the status has none. */
export function statusTime (status: TaskStatus, now: number): number {
  return Date.parse(status.timestamp ?? '') || now
}

/** When a task in this status stops being visible: `null` (never) unless it is terminal and a TTL is set. */
export function expiry (status: TaskStatus, now: number, ttl: number | undefined): number | null {
  return ttl !== undefined && isTerminal(status.state) ? now + ttl : null
}

export interface TaskRowParts {
  id: string
  contextId: string | null
  status: TaskStatus
  metadata: Record<string, unknown> | null
  history: Task['history']
  artifacts: Artifact[]
}

export function joinTask (row: TaskRowParts): Task {
  const task: Task = { id: row.id, status: row.status }
  if (row.contextId !== null) task.contextId = row.contextId
  if (row.artifacts.length > 0) task.artifacts = row.artifacts
  if (row.history !== undefined && row.history.length > 0) task.history = row.history
  if (row.metadata !== null) task.metadata = row.metadata
  return task
}

export const UNFINISHED_STATES = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'] as const

/** The condition of every UPDATE that changes a task: nothing leaves a terminal state (`TaskStore.update`). */
export const NOT_TERMINAL = `state NOT IN (${TERMINAL_STATES.map(state => `'${state}'`).join(', ')})`
