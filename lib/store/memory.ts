// In-memory stores: the default. Terminal tasks expire after a TTL and the number of
// tasks held is capped; both are swept lazily on writes, so no timer keeps the
// process alive.
import { InvalidParamsError, UnavailableError } from '../errors/index.js'
import type { Task } from '../schema/wire.js'
import { isTerminal } from '../handler/states.js'
import type {
  ListTasksPage, ListTasksQuery, PushConfigPage, PushConfigStore, Scope, StoredPushConfig, TaskChange, TaskStore
} from './types.js'
import type { TaskPushNotificationConfig } from '../schema/wire.js'

export interface MemoryTaskStoreOptions {
  /** How long a terminal task is kept, in ms. Default 1 hour. */
  ttl?: number
  /** How many tasks are held at most; past it the oldest terminal task is evicted. Default 10,000. */
  maxTasks?: number
  /** Clock, for tests. */
  now?: () => number
}

interface Entry {
  task: Task
  /** Status timestamp in ms: the sort key of ListTasks. */
  updatedAt: number
}

interface TerminalMark {
  key: string
  /** When the task became terminal, in ms. */
  since: number
}

const key = (scope: Scope, id: string) => `${scope.tenant}\u0000${id}`

export function encodeCursor (updatedAt: number, id: string): string {
  return Buffer.from(JSON.stringify([updatedAt, id])).toString('base64url')
}

export function decodeCursor (token: string): [number, string] {
  try {
    const cursor = JSON.parse(Buffer.from(token, 'base64url').toString())
    if (Array.isArray(cursor) && typeof cursor[0] === 'number' && typeof cursor[1] === 'string') return cursor as [number, string]
  } catch {}
  throw new InvalidParamsError('pageToken is not a token this server issued')
}

/** Newest first; ties broken by id so the order, and so the cursor, is total. */
function before (a: Entry, b: Entry): number {
  return b.updatedAt - a.updatedAt || (a.task.id < b.task.id ? 1 : a.task.id > b.task.id ? -1 : 0)
}

export class MemoryTaskStore implements TaskStore {
  readonly isolatesTenants = true
  readonly #tasks = new Map<string, Entry>()
  /** The terminal tasks' marks, by key. */
  readonly #terminal = new Map<string, TerminalMark>()
  /**
   * The same marks in the order their tasks became terminal: the TTL sweep and the eviction
   * read from the front, skipping a mark no longer in #terminal. Reading the Map's first key
   * instead steps over every entry deleted since V8 last compacted it, thousands per create.
   */
  #terminalOrder: TerminalMark[] = []
  #terminalHead = 0
  readonly #ttl: number
  readonly #maxTasks: number
  readonly #now: () => number

  constructor (options: MemoryTaskStoreOptions = {}) {
    this.#ttl = options.ttl ?? 3_600_000
    this.#maxTasks = options.maxTasks ?? 10_000
    this.#now = options.now ?? Date.now
  }

  get size (): number {
    return this.#tasks.size
  }

  async create (task: Task, scope: Scope): Promise<void> {
    this.#sweep()
    if (this.#tasks.size >= this.#maxTasks) {
      const oldest = this.#oldestTerminal()
      if (oldest === undefined) throw new UnavailableError('the task store is full')
      this.#evict(oldest)
    }
    const k = key(scope, task.id)
    this.#tasks.set(k, { task, updatedAt: Date.parse(task.status.timestamp ?? '') || this.#now() })
    if (isTerminal(task.status.state)) this.#markTerminal(k)
  }

  async get (id: string, scope: Scope): Promise<Task | undefined> {
    const k = key(scope, id)
    const entry = this.#tasks.get(k)
    if (entry === undefined) return undefined
    if (this.#expired(k)) {
      this.#evict(k)
      return undefined
    }
    return entry.task
  }

  async update (id: string, change: TaskChange, scope: Scope): Promise<void> {
    const k = key(scope, id)
    const entry = this.#tasks.get(k)
    if (entry === undefined) return
    const { task } = entry
    switch (change.kind) {
      case 'status':
        task.status = change.status
        entry.updatedAt = Date.parse(change.status.timestamp ?? '') || this.#now()
        if (isTerminal(change.status.state)) this.#markTerminal(k)
        break
      case 'history':
        (task.history ??= []).push(change.message)
        break
      case 'artifact': {
        const artifacts = (task.artifacts ??= [])
        const existing = change.append ? artifacts.find(a => a.artifactId === change.artifact.artifactId) : undefined
        if (existing === undefined) {
          const index = artifacts.findIndex(a => a.artifactId === change.artifact.artifactId)
          const copy = { ...change.artifact, parts: change.artifact.parts.slice() }
          if (index === -1) artifacts.push(copy)
          else artifacts[index] = copy
        } else {
          for (const part of change.artifact.parts) existing.parts.push(part)
          if (change.artifact.metadata !== undefined) existing.metadata = { ...existing.metadata, ...change.artifact.metadata }
        }
        break
      }
    }
  }

  async list (query: ListTasksQuery, scope: Scope): Promise<ListTasksPage> {
    const prefix = `${scope.tenant}\u0000`
    const matching: Entry[] = []
    for (const [k, entry] of this.#tasks) {
      if (!k.startsWith(prefix) || this.#expired(k)) continue
      const { task } = entry
      if (query.contextId !== undefined && task.contextId !== query.contextId) continue
      if (query.status !== undefined && task.status.state !== query.status) continue
      if (query.statusTimestampAfter !== undefined && entry.updatedAt < query.statusTimestampAfter) continue
      matching.push(entry)
    }
    matching.sort(before)
    let start = 0
    if (query.pageToken !== undefined && query.pageToken !== '') {
      const [updatedAt, id] = decodeCursor(query.pageToken)
      const cursor = { updatedAt, task: { id } } as Entry
      start = matching.findIndex(entry => before(cursor, entry) < 0)
      if (start === -1) start = matching.length
    }
    const page = matching.slice(start, start + query.pageSize)
    const last = page[page.length - 1]
    const more = start + page.length < matching.length
    return {
      tasks: page.map(entry => entry.task),
      totalSize: matching.length,
      nextPageToken: more && last !== undefined ? encodeCursor(last.updatedAt, last.task.id) : ''
    }
  }

  #expired (k: string): boolean {
    const mark = this.#terminal.get(k)
    return mark !== undefined && this.#now() - mark.since >= this.#ttl
  }

  /** As Map.set did: a task marked again keeps its place in the order, with the new time. */
  #markTerminal (k: string): void {
    const mark = this.#terminal.get(k)
    if (mark !== undefined) {
      mark.since = this.#now()
      return
    }
    const fresh = { key: k, since: this.#now() }
    this.#terminal.set(k, fresh)
    this.#terminalOrder.push(fresh)
  }

  /** The key of the task that became terminal first. */
  #oldestTerminal (): string | undefined {
    const order = this.#terminalOrder
    while (this.#terminalHead < order.length) {
      const mark = order[this.#terminalHead] as TerminalMark
      if (this.#terminal.get(mark.key) === mark) return mark.key
      this.#terminalHead++
      if (this.#terminalHead > 1024 && this.#terminalHead * 2 > order.length) {
        this.#terminalOrder = order.slice(this.#terminalHead)
        this.#terminalHead = 0
        return this.#oldestTerminal()
      }
    }
    return undefined
  }

  #evict (k: string): void {
    this.#tasks.delete(k)
    this.#terminal.delete(k)
  }

  #sweep (): void {
    for (let k = this.#oldestTerminal(); k !== undefined && this.#expired(k); k = this.#oldestTerminal()) this.#evict(k)
  }
}

export class MemoryPushConfigStore implements PushConfigStore {
  readonly isolatesTenants = true
  /** task key → (config id → config), in creation order. */
  readonly #configs = new Map<string, Map<string, TaskPushNotificationConfig>>()

  async set (config: StoredPushConfig, scope: Scope): Promise<void> {
    const k = key(scope, config.taskId)
    let forTask = this.#configs.get(k)
    if (forTask === undefined) this.#configs.set(k, forTask = new Map())
    forTask.set(config.id, config)
  }

  async get (taskId: string, id: string, scope: Scope): Promise<TaskPushNotificationConfig | undefined> {
    return this.#configs.get(key(scope, taskId))?.get(id)
  }

  async list (taskId: string, page: { pageSize: number, pageToken?: string }, scope: Scope): Promise<PushConfigPage> {
    const all = [...(this.#configs.get(key(scope, taskId))?.values() ?? [])]
    let start = 0
    if (page.pageToken !== undefined && page.pageToken !== '') {
      const [offset] = decodeCursor(page.pageToken)
      start = offset
    }
    const configs = all.slice(start, start + page.pageSize)
    const next = start + configs.length
    return { configs, nextPageToken: next < all.length ? encodeCursor(next, '') : '' }
  }

  async delete (taskId: string, id: string, scope: Scope): Promise<void> {
    const k = key(scope, taskId)
    const forTask = this.#configs.get(k)
    if (forTask === undefined) return
    forTask.delete(id)
    if (forTask.size === 0) this.#configs.delete(k)
  }
}
