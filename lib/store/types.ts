// Store interfaces. The request handler is written against these only, so durable
// stores plug in without touching it. Every read and write is scoped by tenant.
import type { Artifact, Message, Task, TaskPushNotificationConfig, TaskState, TaskStatus } from '../schema/wire.js'

export interface Scope {
  /** Opaque tenant id; `''` is the default tenant. */
  tenant: string
}

/**
 * One change to a task. Writing a change costs O(change): an artifact chunk with
 * `append` adds its parts to the stored artifact, it does not rewrite the task.
 */
export type TaskChange =
  | { kind: 'status', status: TaskStatus }
  | { kind: 'history', message: Message }
  | { kind: 'artifact', artifact: Artifact, append: boolean }

export interface ListTasksQuery {
  contextId?: string
  status?: TaskState
  /** Only tasks whose status timestamp is >= this (ms since epoch). */
  statusTimestampAfter?: number
  pageSize: number
  pageToken?: string
  /**
   * The answer shows at most this many of each task's latest messages (absent: all of them), and
   * no artifacts when `includeArtifacts` is false: a store may leave the rest unread. The
   * handler trims what is returned either way.
   */
  historyLength?: number
  includeArtifacts?: boolean
}

/** What an answer shows of a task: at most its latest `historyLength` messages (absent: all). */
export interface TaskView {
  historyLength?: number
}

export interface ListTasksPage {
  tasks: Task[]
  totalSize: number
  /** `''` on the last page. */
  nextPageToken: string
}

/**
 * Every task has a version: 1 when created, one more with each change. The three stores
 * shipped count it; `create` and `update` resolve with the version after the write
 * (`update` with undefined when the task does not exist). A store that counts none
 * resolves with nothing and has no `getVersioned`.
 */
export interface TaskStore {
  /** True when every read and write is scoped by tenant; a server refuses tenants otherwise. */
  readonly isolatesTenants?: boolean
  /** Stores a new task (version 1). */
  create (task: Task, scope: Scope): Promise<number | void>
  /**
   * The task as stored, or undefined. The object is a read view: callers copy what
   * they keep and never mutate it.
   */
  /**
   * The task, or undefined. With `view` (GetTask's), a store may read no more than its latest
   * `historyLength` messages: the handler trims what is returned either way.
   */
  get (id: string, scope: Scope, view?: TaskView): Promise<Task | undefined>
  /**
   * `get` with the task's version, read together: the task holds exactly the changes up to
   * that version. A stream from another instance drops the events the snapshot already holds by it.
   */
  getVersioned? (id: string, scope: Scope): Promise<VersionedTask | undefined>
  /**
   * Applies one change to an existing task. A task in a terminal state never changes again:
   * the change is refused with `TaskTerminalError` and nothing is written. (The request
   * handler of another process sharing the store ended the task first; this one takes that end.)
   */
  update (id: string, change: TaskChange, scope: Scope): Promise<number | void>
  /** Tasks newest status first, paged by an opaque cursor. Throws InvalidParams for a bad token. */
  list (query: ListTasksQuery, scope: Scope): Promise<ListTasksPage>
  /**
   * Durable stores only: every task, in every tenant, in SUBMITTED or WORKING. Called once at
   * start-up, before any executor runs, so these were left running by a process that died.
   */
  listUnfinished? (): Promise<UnfinishedTask[]>
  /**
   * Optional, for a store that never waits (the memory store): `create`, `get` and `update`
   * done at once. The request handler then applies an executor's events synchronously,
   * without a promise and a turn of the microtask queue per store call.
   */
  readonly immediate?: ImmediateTaskStore | undefined
}

/** `TaskStore`'s create, get and update, with the same semantics, returning at once. */
export interface ImmediateTaskStore {
  createNow (task: Task, scope: Scope): number
  getNow (id: string, scope: Scope): Task | undefined
  updateNow (id: string, change: TaskChange, scope: Scope): number | undefined
}

export interface VersionedTask {
  task: Task
  version: number
}

/** A task found by `listUnfinished`. */
export interface UnfinishedTask {
  taskId: string
  contextId: string
  scope: Scope
}

/** A push config as stored: its id and owning task always set. */
export type StoredPushConfig = TaskPushNotificationConfig & { id: string, taskId: string }

export interface PushConfigPage {
  configs: TaskPushNotificationConfig[]
  nextPageToken: string
}

export interface PushConfigStore {
  /** True when every read and write is scoped by tenant. */
  readonly isolatesTenants?: boolean
  /** Stores the config (its `id` and `taskId` set), replacing one with the same id. */
  set (config: StoredPushConfig, scope: Scope): Promise<void>
  get (taskId: string, id: string, scope: Scope): Promise<TaskPushNotificationConfig | undefined>
  /**
   * The task's configs in code point order of their ids (UTF-8 byte order), from the first id
   * after the one `pageToken` holds: the stores that ship put the page's last id in its
   * `nextPageToken`, which stays right when configs are deleted or created between pages and
   * tells nothing of other tenants.
   */
  list (taskId: string, page: { pageSize: number, pageToken?: string }, scope: Scope): Promise<PushConfigPage>
  /** Idempotent. */
  delete (taskId: string, id: string, scope: Scope): Promise<void>
  /**
   * Optional, for a store that can tell without I/O (the memory store): does the task have
   * a config now? Push delivery skips the config lookup of an event when it says false.
   */
  hasConfigs? (taskId: string, scope: Scope): boolean
}
