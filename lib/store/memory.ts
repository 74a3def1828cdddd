// In-memory stores: the default. Terminal tasks expire after a TTL and the number of
// tasks held is capped; both are swept lazily on writes, so no timer keeps the
// process alive.
import { copyArtifact, spreadInto } from '../copy.js'
import { TaskTerminalError, UnavailableError, invalidParams } from '../errors/index.js'
import { InvalidOptionError } from '../options.js'
import { isKey, type Artifact, type Task } from '../schema/wire.js'
import { isTerminal } from '../handler/states.js'
import type {
  ImmediateTaskStore, ListTasksPage, ListTasksQuery, PushConfigPage, PushConfigStore, Scope, StoredPushConfig, TaskChange, TaskStore, VersionedTask
} from './types.js'
import type { TaskPushNotificationConfig } from '../schema/wire.js'

export interface MemoryTaskStoreOptions {
  /** How long a terminal task is kept, in ms. Default 1 hour. */
  ttl?: number
  /** How many tasks are held at most; past it the oldest terminal task is evicted. Default 10,000. */
  maxTasks?: number
  /**
   * How many tasks one tenant may hold at most; past it that tenant's oldest terminal task is
   * evicted, and with none its new task is refused as a full store's is. Default `maxTasks`:
   * a multi-tenant deployment should set it lower, or one tenant can fill the store for all.
   */
  maxTasksPerTenant?: number
  /**
   * The push-config store whose configs belong to this store's tasks: a task's configs are
   * deleted with it when it expires or is evicted. The plugin pairs its default stores so.
   */
  pushConfigStore?: MemoryPushConfigStore
  /** Clock, for tests. */
  now?: () => number
}

/**
 * A task held, with what the TTL sweep and the eviction need: one object a task, every
 * field set from the start (every entry shares one hidden class).
 */
interface Entry {
  task: Task
  readonly tenant: string
  /** Status timestamp in ms: the sort key of ListTasks. */
  updatedAt: number
  /** 1 when created, one more per change (TaskStore). */
  version: number
  /** When the task became terminal, in ms; NaN until it does. The entry is then in the terminal order. */
  terminalSince: number
  /** Cleared when the task is evicted: the order's reads then skip the entry without a lookup. */
  held: boolean
  /**
   * Artifact id → its index in `task.artifacts`, made once the task has more than
   * INDEXED_ARTIFACTS of them (a search through fewer costs less than a Map).
   */
  artifactIndex: Map<string, number> | undefined
}

/** Past this many artifacts a task's are found through its entry's `artifactIndex`. */
const INDEXED_ARTIFACTS = 8

/**
 * Past twice the tasks held, and this many more, an order drops its gone entries: a few, so
 * that each tenant's order of a small cap stays small too.
 */
const GONE_SLACK = 16

/**
 * Entries in the order their tasks became terminal: the TTL sweep and the eviction read
 * from the front, skipping an entry whose task is gone. (A Map's first key, read instead,
 * steps over every entry deleted since V8 last compacted it.) An entry also goes from the
 * middle (a tenant's own cap, a task expired on a read or created again running), behind an
 * older one still held: the order keeps no more than twice as many entries as its scope holds
 * tasks, and a few more.
 */
class TerminalOrder {
  #entries: Entry[] = []
  #head = 0

  /**
   * Steps past the gone entries at the front first, so an order read only now and then stays short.
   * `held`: how many tasks the order's scope (the store, or the tenant) holds, at least as many as
   * its entries held: past twice that (and GONE_SLACK) at least half of them are gone and are
   * dropped, a pass the pushes since the last one pay for.
   */
  push (entry: Entry, held: number): void {
    this.oldest()
    if (this.#entries.length > 2 * held + GONE_SLACK) this.#compact()
    this.#entries.push(entry)
  }

  /** The entry of the task that became terminal first, of those still held. */
  oldest (): Entry | undefined {
    const entries = this.#entries
    while (this.#head < entries.length) {
      const entry = entries[this.#head] as Entry
      if (entry.held) return entry
      this.#head++
      if (this.#head > 1024 && this.#head * 2 > entries.length) {
        this.#entries = entries.slice(this.#head)
        this.#head = 0
        return this.oldest()
      }
    }
    return undefined
  }

  /** Keeps the entries held, in their order, in place: the array shrinks, no other is made. */
  #compact (): void {
    const entries = this.#entries
    let kept = 0
    for (let index = this.#head; index < entries.length; index++) {
      const entry = entries[index] as Entry
      if (entry.held) entries[kept++] = entry
    }
    entries.length = kept
    this.#head = 0
  }
}

export function encodeCursor (updatedAt: number, id: string): string {
  return Buffer.from(JSON.stringify([updatedAt, id])).toString('base64url')
}

/**
 * A cursor this server issued: an integer (ms, or 0 in a push-config cursor; at least `min`) and an id. Anything
 * else is refused, so a forged one can neither loop a client nor reach a store's SQL as a bad value.
 */
export function decodeCursor (token: string, min = Number.MIN_SAFE_INTEGER): [number, string] {
  try {
    const cursor = JSON.parse(Buffer.from(token, 'base64url').toString())
    if (Array.isArray(cursor) && Number.isSafeInteger(cursor[0]) && cursor[0] >= min && typeof cursor[1] === 'string' && isKey(cursor[1])) return cursor as [number, string]
  } catch {}
  throw notIssued()
}

function notIssued (): Error {
  return invalidParams([{ field: 'pageToken', description: 'is not a token this server issued' }])
}

/**
 * The cursor of a page of push configs, on every store: the id of the page's last config (a
 * task's configs are listed in `compareCodePoints` order of their ids). The next page starts at
 * the first id after it, so a config deleted or created between pages moves no other, and the
 * token tells its holder nothing but an id of its own.
 */
export function encodeIdCursor (id: string): string {
  return encodeCursor(0, id)
}

/** The id an `encodeIdCursor` token holds; any other token is refused (an offset or sequence number of an earlier version included). */
export function decodeIdCursor (token: string): string {
  const [zero, id] = decodeCursor(token, 0)
  if (zero !== 0) throw notIssued()
  return id
}

/**
 * Negative, 0 or positive as `a` is before, equal to or after `b` in code point order: UTF-8
 * byte order, that of SQLite's BINARY and PostgreSQL's "C" collations. `<` compares UTF-16
 * units, which puts U+E000–U+FFFF after every character above U+FFFF (its surrogates,
 * U+D800–U+DFFF): here a surrogate is moved above U+FFFF and U+E000–U+FFFF down into its place.
 */
export function compareCodePoints (a: string, b: string): number {
  const length = a.length < b.length ? a.length : b.length
  for (let index = 0; index < length; index++) {
    const x = a.charCodeAt(index)
    const y = b.charCodeAt(index)
    if (x !== y) return codePointRank(x) - codePointRank(y)
  }
  return a.length - b.length
}

function codePointRank (unit: number): number {
  return unit < 0xd800 ? unit : unit < 0xe000 ? unit + 0x2000 : unit - 0x800
}

function byId (a: StoredPushConfig, b: StoredPushConfig): number {
  return compareCodePoints(a.id, b.id)
}

/** What an evicted entry holds instead of its task: the terminal order may keep the entry a while longer. */
const EVICTED: Task = Object.freeze({ id: '', status: Object.freeze({ state: 'TASK_STATE_CANCELED' as const }) })

/** Newest first; ties broken by id so the order, and so the cursor, is total. */
function before (a: Entry, b: Entry): number {
  return b.updatedAt - a.updatedAt || (a.task.id < b.task.id ? 1 : a.task.id > b.task.id ? -1 : 0)
}

/** Where the artifact is among the task's `artifacts`; -1 when it has none of that id. */
function indexOfArtifact (entry: Entry, artifacts: Artifact[], artifactId: string): number {
  if (artifacts.length <= INDEXED_ARTIFACTS) {
    for (let index = 0; index < artifacts.length; index++) if ((artifacts[index] as Artifact).artifactId === artifactId) return index
    return -1
  }
  let byId = entry.artifactIndex
  if (byId === undefined) {
    byId = entry.artifactIndex = new Map()
    // The first of an id, as a search from the front finds (a task created with two of one id).
    for (let index = artifacts.length - 1; index >= 0; index--) byId.set((artifacts[index] as Artifact).artifactId, index)
  }
  return byId.get(artifactId) ?? -1
}

export class MemoryTaskStore implements TaskStore, ImmediateTaskStore {
  readonly isolatesTenants = true
  /** Tenant → task id → entry: a lookup builds no key string (a call makes several). */
  readonly #tenants = new Map<string, Map<string, Entry>>()
  #count = 0
  /** Every terminal task's entry. */
  readonly #terminalOrder = new TerminalOrder()
  /**
   * Each tenant's terminal entries, for its own cap; kept only when that cap is below
   * `maxTasks` (otherwise the store's cap is always reached first).
   */
  readonly #tenantTerminalOrders: Map<string, TerminalOrder> | undefined
  readonly #ttl: number
  readonly #maxTasks: number
  readonly #maxTasksPerTenant: number
  readonly #now: () => number
  readonly #pushConfigs: MemoryPushConfigStore | undefined
  /** The last status timestamp parsed, and its ms: a turn's timestamps mostly repeat it. */
  #lastTimestamp = ''
  #lastTimestampMs = Number.NaN

  constructor (options: MemoryTaskStoreOptions = {}) {
    this.#ttl = options.ttl ?? 3_600_000
    this.#maxTasks = options.maxTasks ?? 10_000
    this.#maxTasksPerTenant = options.maxTasksPerTenant ?? this.#maxTasks
    if (!Number.isSafeInteger(this.#maxTasksPerTenant) || this.#maxTasksPerTenant < 1) {
      throw new InvalidOptionError('maxTasksPerTenant', 'must be an integer >= 1')
    }
    this.#tenantTerminalOrders = this.#maxTasksPerTenant < this.#maxTasks ? new Map() : undefined
    this.#now = options.now ?? Date.now
    this.#pushConfigs = options.pushConfigStore
  }

  get size (): number {
    return this.#count
  }

  /**
   * This store, unless a subclass overrides `create`, `get` or `update`: its own versions
   * must then be the ones called, through promises.
   */
  get immediate (): ImmediateTaskStore | undefined {
    const own = MemoryTaskStore.prototype
    return this.create === own.create && this.get === own.get && this.update === own.update ? this : undefined
  }

  async create (task: Task, scope: Scope): Promise<number> {
    return this.createNow(task, scope)
  }

  async get (id: string, scope: Scope): Promise<Task | undefined> {
    return this.getNow(id, scope)
  }

  async update (id: string, change: TaskChange, scope: Scope): Promise<number | undefined> {
    return this.updateNow(id, change, scope)
  }

  createNow (task: Task, scope: Scope): number {
    this.#sweep()
    const tenantOrders = this.#tenantTerminalOrders
    if (tenantOrders !== undefined && (this.#tenants.get(scope.tenant)?.size ?? 0) >= this.#maxTasksPerTenant) {
      this.#makeRoom(tenantOrders.get(scope.tenant))
    }
    if (this.#count >= this.#maxTasks) this.#makeRoom(this.#terminalOrder)
    let tasks = this.#tenants.get(scope.tenant)
    if (tasks === undefined) this.#tenants.set(scope.tenant, tasks = new Map())
    const updatedAt = this.#timeOf(task.status.timestamp)
    let entry = tasks.get(task.id)
    if (entry === undefined) {
      this.#count++
      entry = { task, tenant: scope.tenant, updatedAt, version: 1, terminalSince: Number.NaN, held: true, artifactIndex: undefined }
      tasks.set(task.id, entry)
    } else if (!Number.isNaN(entry.terminalSince) && !isTerminal(task.status.state)) {
      // A terminal task created again running leaves the terminal order (neither expired nor
      // evicted as finished): a fresh entry, and the old one let go there, as an evicted one is.
      entry.held = false
      entry.task = EVICTED
      entry.artifactIndex = undefined
      entry = { task, tenant: scope.tenant, updatedAt, version: 1, terminalSince: Number.NaN, held: true, artifactIndex: undefined }
      tasks.set(task.id, entry)
    } else {
      // A task created again under its id keeps its entry, and so its place in the terminal order.
      entry.task = task
      entry.updatedAt = updatedAt
      entry.version = 1
      entry.artifactIndex = undefined
    }
    if (isTerminal(task.status.state)) this.#markTerminal(entry, tasks)
    return entry.version
  }

  getNow (id: string, scope: Scope): Task | undefined {
    return this.#live(id, scope)?.task
  }

  async getVersioned (id: string, scope: Scope): Promise<VersionedTask | undefined> {
    const entry = this.#live(id, scope)
    return entry === undefined ? undefined : { task: entry.task, version: entry.version }
  }

  updateNow (id: string, change: TaskChange, scope: Scope): number | undefined {
    const tasks = this.#tenants.get(scope.tenant)
    const entry = tasks?.get(id)
    if (entry === undefined) return undefined
    const { task } = entry
    // Nothing leaves a terminal state: whoever shares this store and ended the task first wins.
    if (isTerminal(task.status.state)) throw new TaskTerminalError(id, task.status.state)
    switch (change.kind) {
      case 'status':
        task.status = change.status
        entry.updatedAt = this.#timeOf(change.status.timestamp)
        if (isTerminal(change.status.state)) this.#markTerminal(entry, tasks as Map<string, Entry>)
        break
      case 'history':
        (task.history ??= []).push(change.message)
        break
      case 'artifact': {
        const { artifact } = change
        const artifacts = task.artifacts
        // A task's first artifact makes an array of one: a push onto [] makes room for seventeen.
        if (artifacts === undefined) {
          task.artifacts = [copyArtifact(artifact)]
          break
        }
        const index = indexOfArtifact(entry, artifacts, artifact.artifactId)
        if (index === -1) {
          entry.artifactIndex?.set(artifact.artifactId, artifacts.length)
          artifacts.push(copyArtifact(artifact))
        } else if (change.append) {
          const existing = artifacts[index] as Artifact
          for (const part of artifact.parts) existing.parts.push(part)
          // Merged in place: a copy a chunk made a stream whose chunks add keys quadratic.
          if (artifact.metadata !== undefined) spreadInto(existing.metadata ??= {}, artifact.metadata)
        } else {
          artifacts[index] = copyArtifact(artifact)
        }
        break
      }
    }
    return ++entry.version
  }

  async list (query: ListTasksQuery, scope: Scope): Promise<ListTasksPage> {
    const matching: Entry[] = []
    for (const entry of this.#tenants.get(scope.tenant)?.values() ?? []) {
      if (this.#expired(entry)) continue
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

  /** The task's entry unless it is missing or expired (an expired one is evicted now). */
  #live (id: string, scope: Scope): Entry | undefined {
    const entry = this.#tenants.get(scope.tenant)?.get(id)
    if (entry === undefined) return undefined
    if (this.#expired(entry)) {
      this.#evict(entry)
      return undefined
    }
    return entry
  }

  /** A status timestamp in ms; the clock's time when it has none or is not a date. */
  #timeOf (timestamp: string | undefined): number {
    if (timestamp !== this.#lastTimestamp) {
      this.#lastTimestamp = timestamp ?? ''
      this.#lastTimestampMs = Date.parse(this.#lastTimestamp)
    }
    return this.#lastTimestampMs || this.#now()
  }

  /** NaN (not yet terminal) is never expired. */
  #expired (entry: Entry): boolean {
    return this.#now() - entry.terminalSince >= this.#ttl
  }

  /** A task marked again keeps its place in the orders, with the new time. `tasks`: its tenant's. */
  #markTerminal (entry: Entry, tasks: Map<string, Entry>): void {
    const first = Number.isNaN(entry.terminalSince)
    entry.terminalSince = this.#now()
    if (!first) return
    this.#terminalOrder.push(entry, this.#count)
    const tenantOrders = this.#tenantTerminalOrders
    if (tenantOrders === undefined) return
    let order = tenantOrders.get(entry.tenant)
    if (order === undefined) tenantOrders.set(entry.tenant, order = new TerminalOrder())
    order.push(entry, tasks.size)
  }

  /** Evicts the oldest terminal task of `order`; with none, the store is full. */
  #makeRoom (order: TerminalOrder | undefined): void {
    const oldest = order?.oldest()
    if (oldest === undefined) throw new UnavailableError('the task store is full')
    this.#evict(oldest)
  }

  /** `entry` is one the store holds: the map's, or a held one from the terminal order. */
  #evict (entry: Entry): void {
    const tasks = this.#tenants.get(entry.tenant) as Map<string, Entry>
    tasks.delete(entry.task.id)
    this.#pushConfigs?.deleteTask(entry.task.id, entry.tenant)
    entry.held = false
    entry.task = EVICTED
    entry.artifactIndex = undefined
    this.#count--
    if (tasks.size === 0) {
      this.#tenants.delete(entry.tenant)
      this.#tenantTerminalOrders?.delete(entry.tenant)
    }
  }

  #sweep (): void {
    for (let entry = this.#terminalOrder.oldest(); entry !== undefined && this.#expired(entry); entry = this.#terminalOrder.oldest()) {
      this.#evict(entry)
    }
  }
}

export class MemoryPushConfigStore implements PushConfigStore {
  readonly isolatesTenants = true
  /** Tenant → task id → (config id → config), in the order of the ids (`compareCodePoints`), as `list` walks it. */
  readonly #tenants = new Map<string, Map<string, Map<string, StoredPushConfig>>>()

  async set (config: StoredPushConfig, scope: Scope): Promise<void> {
    let tasks = this.#tenants.get(scope.tenant)
    if (tasks === undefined) this.#tenants.set(scope.tenant, tasks = new Map())
    let forTask = tasks.get(config.taskId)
    if (forTask === undefined) tasks.set(config.taskId, forTask = new Map())
    const added = !forTask.has(config.id)
    // A replaced config keeps its place; a new one goes last, and the map is put back in id
    // order when that is not its place (a task has a few configs: push.maxConfigsPerTask).
    forTask.set(config.id, config)
    if (added && forTask.size > 1 && !this.#inOrder(forTask)) {
      const configs = [...forTask.values()].sort(byId)
      forTask.clear()
      for (const each of configs) forTask.set(each.id, each)
    }
  }

  #inOrder (forTask: Map<string, StoredPushConfig>): boolean {
    let previous: string | undefined
    for (const id of forTask.keys()) {
      if (previous !== undefined && compareCodePoints(previous, id) > 0) return false
      previous = id
    }
    return true
  }

  async get (taskId: string, id: string, scope: Scope): Promise<TaskPushNotificationConfig | undefined> {
    return this.#forTask(taskId, scope)?.get(id)
  }

  hasConfigs (taskId: string, scope: Scope): boolean {
    // A task's map goes when its last config does.
    return this.#forTask(taskId, scope) !== undefined
  }

  /** In the order of their ids (`compareCodePoints`, as the SQL stores), from the first id after the token's. */
  async list (taskId: string, page: { pageSize: number, pageToken?: string }, scope: Scope): Promise<PushConfigPage> {
    const after = page.pageToken === undefined || page.pageToken === '' ? undefined : decodeIdCursor(page.pageToken)
    const configs: StoredPushConfig[] = []
    let more = false
    for (const config of this.#forTask(taskId, scope)?.values() ?? []) {
      if (after !== undefined && compareCodePoints(config.id, after) <= 0) continue
      if (configs.length === page.pageSize) {
        more = true
        break
      }
      configs.push(config)
    }
    const last = configs[configs.length - 1]
    return { configs, nextPageToken: more && last !== undefined ? encodeIdCursor(last.id) : '' }
  }

  async delete (taskId: string, id: string, scope: Scope): Promise<void> {
    const forTask = this.#forTask(taskId, scope)
    forTask?.delete(id)
    if (forTask?.size === 0) this.deleteTask(taskId, scope.tenant)
  }

  /** Every config of the task, at once: its task left the paired MemoryTaskStore. Idempotent. */
  deleteTask (taskId: string, tenant: string): void {
    const tasks = this.#tenants.get(tenant)
    if (tasks === undefined) return
    tasks.delete(taskId)
    if (tasks.size === 0) this.#tenants.delete(tenant)
  }

  #forTask (taskId: string, scope: Scope): Map<string, StoredPushConfig> | undefined {
    return this.#tenants.get(scope.tenant)?.get(taskId)
  }
}
