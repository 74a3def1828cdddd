// SQLite stores (better-sqlite3, WAL mode) for one process, or a few sharing a file.
// better-sqlite3 is synchronous, so each change runs whole, in one transaction, before
// the next begins: no lost update. Chunks of an artifact are rows; appending one is an
// INSERT, never a rewrite of the task. A lock another connection holds is waited for on
// timers, not in SQLite's busy handler, which would block the event loop (every call of the
// process) for the whole wait.
import { setTimeout as sleep } from 'node:timers/promises'
import type Database from 'better-sqlite3'
import type { Artifact, Message, Task, TaskPushNotificationConfig, TaskState, TaskStatus } from '../schema/wire.js'
import { TaskTerminalError } from '../errors/index.js'
import { decodeCursor, decodeIdCursor, encodeCursor, encodeIdCursor } from './memory.js'
import { InvalidOptionError } from '../options.js'
import { optionalRequire } from '../optional-require.js'
import { expiry, joinArtifact, joinTask, NOT_TERMINAL, splitArtifact, statusTime, UNFINISHED_STATES, type ArtifactFields, type Chunk } from './rows.js'
import type {
  ListTasksPage, ListTasksQuery, PushConfigPage, PushConfigStore, Scope, StoredPushConfig, TaskChange, TaskStore, TaskView, UnfinishedTask, VersionedTask
} from './types.js'

export interface SqliteStoreOptions {
  /** The database file; created when missing. `':memory:'` for a private in-memory database. */
  path: string
  /** How long a terminal task is kept, in ms. Default: forever. */
  ttl?: number
  /**
   * How long a call waits for another connection's lock, in ms, retrying on timers (the event
   * loop runs meanwhile); past it the call fails with `SQLITE_BUSY`. Opening waits as long,
   * synchronously. Default 5,000; 0 = no wait.
   */
  busyTimeout?: number
  /** Clock, for tests. */
  now?: () => number
}

export interface SqliteStores {
  taskStore: SqliteTaskStore
  pushConfigStore: SqlitePushConfigStore
  /** Closes the database. */
  close (): void
}

/** Each entry runs once, in order; the applied count is kept in `user_version`. */
const MIGRATIONS = [`
  CREATE TABLE a2a_tasks (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    context_id TEXT,
    state TEXT NOT NULL,
    status TEXT NOT NULL,
    status_ts INTEGER NOT NULL,
    metadata TEXT,
    expires_at INTEGER,
    PRIMARY KEY (tenant, id)
  ) WITHOUT ROWID;
  CREATE INDEX a2a_tasks_recent ON a2a_tasks (tenant, status_ts DESC, id DESC);
  CREATE INDEX a2a_tasks_context ON a2a_tasks (tenant, context_id, status_ts DESC, id DESC);
  CREATE INDEX a2a_tasks_expiry ON a2a_tasks (expires_at) WHERE expires_at IS NOT NULL;
  CREATE INDEX a2a_tasks_unfinished ON a2a_tasks (state) WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');
  CREATE TABLE a2a_messages (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    task_id TEXT NOT NULL,
    message TEXT NOT NULL,
    FOREIGN KEY (tenant, task_id) REFERENCES a2a_tasks ON DELETE CASCADE
  );
  CREATE INDEX a2a_messages_task ON a2a_messages (tenant, task_id, seq);
  CREATE TABLE a2a_artifacts (
    tenant TEXT NOT NULL,
    task_id TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    fields TEXT NOT NULL,
    PRIMARY KEY (tenant, task_id, artifact_id),
    FOREIGN KEY (tenant, task_id) REFERENCES a2a_tasks ON DELETE CASCADE
  ) WITHOUT ROWID;
  CREATE TABLE a2a_artifact_chunks (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    task_id TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    parts TEXT NOT NULL,
    metadata TEXT,
    FOREIGN KEY (tenant, task_id, artifact_id) REFERENCES a2a_artifacts ON DELETE CASCADE
  );
  CREATE INDEX a2a_artifact_chunks_artifact ON a2a_artifact_chunks (tenant, task_id, artifact_id, seq);
  CREATE TABLE a2a_push_configs (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    config TEXT NOT NULL,
    UNIQUE (tenant, task_id, id)
  );
`, `
  -- A task's version (TaskStore): 1 when created, one more per change.
  ALTER TABLE a2a_tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
`, `
  -- A new artifact's position, the task's last one plus one, is then one step down this
  -- index, not a pass over every artifact of the task; a task's artifacts are read in its order.
  CREATE INDEX a2a_artifacts_order ON a2a_artifacts (tenant, task_id, position);
`]

/** Brings the database's schema up to date. Safe to run on every start. */
export function migrateSqlite (db: Database.Database): void {
  db.transaction(() => {
    const applied = db.pragma('user_version', { simple: true }) as number
    for (let version = applied; version < MIGRATIONS.length; version++) db.exec(MIGRATIONS[version] as string)
    db.pragma(`user_version = ${MIGRATIONS.length}`)
  }).immediate()
}

const DEFAULT_BUSY_TIMEOUT = 5000
/** The first and the longest pause between two attempts on a busy database, in ms. */
const FIRST_RETRY_MS = 2
const LONGEST_RETRY_MS = 100

/** Opens (creating and migrating when needed) the database at `options.path`. Needs better-sqlite3 installed. */
export function openSqliteStores (options: SqliteStoreOptions): SqliteStores {
  const { busyTimeout = DEFAULT_BUSY_TIMEOUT } = options
  if (!Number.isSafeInteger(busyTimeout) || busyTimeout < 0) throw new InvalidOptionError('busyTimeout', 'must be an integer >= 0')
  const Sqlite = optionalRequire<typeof Database>('better-sqlite3', 'openSqliteStores')
  const db = new Sqlite(options.path)
  // Opening is synchronous: it waits in SQLite's busy handler. The calls then never do, and
  // wait on timers instead (retrying).
  db.pragma(`busy_timeout = ${busyTimeout}`)
  db.pragma('journal_mode = WAL')
  db.pragma('foreign_keys = ON')
  migrateSqlite(db)
  db.pragma('busy_timeout = 0')
  return {
    taskStore: new SqliteTaskStore(db, options),
    pushConfigStore: new SqlitePushConfigStore(db, options),
    close: () => db.close()
  }
}

/** A lock another connection holds (`SQLITE_BUSY`, or one of its extended codes). */
function isBusy (error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && /^SQLITE_BUSY(_|$)/.test(code)
}

/**
 * `run()`'s result; while it fails on a busy database, `run` again (a whole transaction: the
 * failed attempt was rolled back) after a pause, doubling up to LONGEST_RETRY_MS, for
 * `budget` ms in all, then its SQLITE_BUSY. Synchronous when the database is not busy.
 */
function retrying<T> (run: () => T, budget: number): T | Promise<T> {
  try {
    return run()
  } catch (error) {
    if (!isBusy(error) || budget === 0) throw error
    return retryLater(run, budget)
  }
}

async function retryLater<T> (run: () => T, budget: number): Promise<T> {
  const deadline = Date.now() + budget
  let pause = FIRST_RETRY_MS
  let busy: unknown
  do {
    await sleep(Math.max(0, Math.min(pause, deadline - Date.now())))
    try {
      return run()
    } catch (error) {
      if (!isBusy(error)) throw error
      busy = error
    }
    pause = Math.min(pause * 2, LONGEST_RETRY_MS)
  } while (Date.now() < deadline)
  throw busy
}

interface TaskRow {
  tenant: string
  id: string
  context_id: string | null
  status: string
  status_ts: number
  metadata: string | null
}

interface ArtifactRow {
  artifact_id: string
  fields: string
}

interface ChunkRow {
  artifact_id: string
  parts: string
  metadata: string | null
}

const json = (value: unknown): string => JSON.stringify(value)

export class SqliteTaskStore implements TaskStore {
  readonly isolatesTenants = true
  readonly #db: Database.Database
  readonly #ttl: number | undefined
  readonly #now: () => number
  readonly #busyTimeout: number
  readonly #statements
  /** ListTasks statements, by SQL text: one per combination of filters. */
  readonly #listStatements = new Map<string, Database.Statement>()

  /** `busyTimeout` applies to a `db` whose own busy_timeout is 0, as `openSqliteStores` leaves it. */
  constructor (db: Database.Database, options: Pick<SqliteStoreOptions, 'ttl' | 'now' | 'busyTimeout'> = {}) {
    this.#db = db
    this.#ttl = options.ttl
    this.#now = options.now ?? Date.now
    this.#busyTimeout = options.busyTimeout ?? DEFAULT_BUSY_TIMEOUT
    this.#statements = {
      insertTask: db.prepare(`INSERT INTO a2a_tasks (tenant, id, context_id, state, status, status_ts, metadata, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
      getTask: db.prepare(`SELECT tenant, id, context_id, status, status_ts, metadata, version FROM a2a_tasks
        WHERE tenant = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)`),
      history: db.prepare('SELECT message FROM a2a_messages WHERE tenant = ? AND task_id = ? ORDER BY seq').pluck(),
      latestHistory: db.prepare('SELECT message FROM a2a_messages WHERE tenant = ? AND task_id = ? ORDER BY seq DESC LIMIT ?').pluck(),
      artifacts: db.prepare('SELECT artifact_id, fields FROM a2a_artifacts WHERE tenant = ? AND task_id = ? ORDER BY position'),
      chunks: db.prepare(`SELECT artifact_id, parts, metadata FROM a2a_artifact_chunks
        WHERE tenant = ? AND task_id = ? ORDER BY seq`),
      nextVersion: db.prepare(`UPDATE a2a_tasks SET version = version + 1 WHERE tenant = ? AND id = ? AND ${NOT_TERMINAL} RETURNING version`).pluck(),
      stateOf: db.prepare('SELECT state FROM a2a_tasks WHERE tenant = ? AND id = ?').pluck(),
      setStatus: db.prepare('UPDATE a2a_tasks SET state = ?, status = ?, status_ts = ?, expires_at = ? WHERE tenant = ? AND id = ?'),
      addMessage: db.prepare(`INSERT INTO a2a_messages (tenant, task_id, message)
        SELECT tenant, id, ? FROM a2a_tasks WHERE tenant = ? AND id = ?`),
      // A new artifact goes last (the last position read on a2a_artifacts_order); an existing one
      // keeps its place (and, for an append, its fields).
      upsertArtifact: db.prepare(`INSERT INTO a2a_artifacts (tenant, task_id, artifact_id, position, fields)
        SELECT tenant, id, ?, (SELECT COALESCE(MAX(position), 0) + 1 FROM a2a_artifacts WHERE tenant = ? AND task_id = ?), ?
        FROM a2a_tasks WHERE tenant = ? AND id = ?
        ON CONFLICT (tenant, task_id, artifact_id) DO UPDATE SET fields = CASE WHEN ? THEN fields ELSE excluded.fields END`),
      deleteChunks: db.prepare('DELETE FROM a2a_artifact_chunks WHERE tenant = ? AND task_id = ? AND artifact_id = ?'),
      addChunk: db.prepare('INSERT INTO a2a_artifact_chunks (tenant, task_id, artifact_id, parts, metadata) VALUES (?, ?, ?, ?, ?)'),
      unfinished: db.prepare(`SELECT tenant, id, context_id FROM a2a_tasks
        WHERE state IN (${UNFINISHED_STATES.map(() => '?').join(', ')})`),
      expiredTasks: db.prepare('SELECT tenant, id FROM a2a_tasks WHERE expires_at <= ?'),
      deleteTask: db.prepare('DELETE FROM a2a_tasks WHERE tenant = ? AND id = ?'),
      deleteTaskConfigs: db.prepare('DELETE FROM a2a_push_configs WHERE tenant = ? AND task_id = ?')
    }
  }

  async create (task: Task, scope: Scope): Promise<number> {
    return this.#retrying(() => {
      const now = this.#now()
      this.#db.transaction(() => {
        if (this.#ttl !== undefined) this.#sweep(now)
        this.#statements.insertTask.run(scope.tenant, task.id, task.contextId ?? null, task.status.state, json(task.status),
          statusTime(task.status, now), task.metadata === undefined ? null : json(task.metadata), expiry(task.status, now, this.#ttl))
        for (const message of task.history ?? []) this.#addMessage(task.id, message, scope)
        for (const artifact of task.artifacts ?? []) this.#writeArtifact(task.id, artifact, false, scope)
      }).immediate()
      return 1
    })
  }

  async get (id: string, scope: Scope, view?: TaskView): Promise<Task | undefined> {
    return this.#retrying(() => this.#read(id, scope, view)?.task)
  }

  async getVersioned (id: string, scope: Scope): Promise<VersionedTask | undefined> {
    return this.#retrying(() => this.#read(id, scope))
  }

  #retrying<T> (run: () => T): T | Promise<T> {
    return retrying(run, this.#busyTimeout)
  }

  /** The task with what `view` shows, and its version, read in one transaction. */
  #read (id: string, scope: Scope, view?: TaskView): VersionedTask | undefined {
    return this.#db.transaction(() => {
      const row = this.#statements.getTask.get(scope.tenant, id, this.#now()) as (TaskRow & { version: number }) | undefined
      return row === undefined ? undefined : { task: this.#assemble(row, view), version: row.version }
    })()
  }

  async update (id: string, change: TaskChange, scope: Scope): Promise<number | undefined> {
    return this.#retrying(() => this.#db.transaction(() => {
      const version = this.#statements.nextVersion.get(scope.tenant, id) as number | undefined
      if (version === undefined) {
        // Nothing written: no such task, or one that ended (nothing leaves a terminal state).
        const state = this.#statements.stateOf.get(scope.tenant, id) as TaskState | undefined
        if (state !== undefined) throw new TaskTerminalError(id, state)
        return undefined
      }
      switch (change.kind) {
        case 'status':
          this.#setStatus(id, change.status, this.#now(), scope)
          break
        case 'history':
          this.#addMessage(id, change.message, scope)
          break
        case 'artifact':
          this.#writeArtifact(id, change.artifact, change.append, scope)
          break
      }
      return version
    }).immediate())
  }

  async list (query: ListTasksQuery, scope: Scope): Promise<ListTasksPage> {
    const filters = ['tenant = ?', '(expires_at IS NULL OR expires_at > ?)']
    const values: unknown[] = [scope.tenant, this.#now()]
    if (query.contextId !== undefined) { filters.push('context_id = ?'); values.push(query.contextId) }
    if (query.status !== undefined) { filters.push('state = ?'); values.push(query.status) }
    if (query.statusTimestampAfter !== undefined) { filters.push('status_ts >= ?'); values.push(query.statusTimestampAfter) }
    const where = filters.join(' AND ')
    let cursor = ''
    const cursorValues: unknown[] = []
    if (query.pageToken !== undefined && query.pageToken !== '') {
      const [statusTs, lastId] = decodeCursor(query.pageToken)
      cursor = ' AND (status_ts < ? OR (status_ts = ? AND id < ?))'
      cursorValues.push(statusTs, statusTs, lastId)
    }
    return this.#retrying(() => this.#db.transaction(() => {
      const totalSize = this.#prepared(`SELECT COUNT(*) FROM a2a_tasks WHERE ${where}`).pluck().get(...values) as number
      // One row more than the page tells whether another page follows.
      const rows = this.#prepared(`SELECT tenant, id, context_id, status, status_ts, metadata FROM a2a_tasks
        WHERE ${where}${cursor} ORDER BY status_ts DESC, id DESC LIMIT ?`).all(...values, ...cursorValues, query.pageSize + 1) as TaskRow[]
      const page = rows.slice(0, query.pageSize)
      const last = page[page.length - 1]
      return {
        tasks: page.map(row => this.#assemble(row, query)),
        totalSize,
        nextPageToken: rows.length > query.pageSize && last !== undefined ? encodeCursor(last.status_ts, last.id) : ''
      }
    })())
  }

  async listUnfinished (): Promise<UnfinishedTask[]> {
    return this.#retrying(() => (this.#statements.unfinished.all(...UNFINISHED_STATES) as Array<{ tenant: string, id: string, context_id: string | null }>)
      .map(row => ({ taskId: row.id, contextId: row.context_id ?? '', scope: { tenant: row.tenant } })))
  }

  #prepared (sql: string): Database.Statement {
    let statement = this.#listStatements.get(sql)
    if (statement === undefined) this.#listStatements.set(sql, statement = this.#db.prepare(sql))
    return statement
  }

  /** The task of `row`; with a `view` (ListTasks), only the latest messages and the artifacts it shows are read. */
  #assemble (row: TaskRow, view?: Pick<ListTasksQuery, 'historyLength' | 'includeArtifacts'>): Task {
    const { tenant, id } = row
    const artifacts = view?.includeArtifacts === false ? [] : this.#artifactsOf(tenant, id)
    const historyLength = view?.historyLength
    const messages = historyLength === undefined
      ? this.#statements.history.all(tenant, id) as string[]
      : historyLength === 0 ? [] : (this.#statements.latestHistory.all(tenant, id, historyLength) as string[]).reverse()
    return joinTask({
      id,
      contextId: row.context_id,
      status: JSON.parse(row.status) as TaskStatus,
      metadata: row.metadata === null ? null : JSON.parse(row.metadata),
      history: messages.map(message => JSON.parse(message) as Message),
      artifacts
    })
  }

  #artifactsOf (tenant: string, id: string): Artifact[] {
    const chunks = new Map<string, Chunk[]>()
    for (const chunk of this.#statements.chunks.all(tenant, id) as ChunkRow[]) {
      let list = chunks.get(chunk.artifact_id)
      if (list === undefined) chunks.set(chunk.artifact_id, list = [])
      list.push(chunk.metadata === null ? { parts: JSON.parse(chunk.parts) } : { parts: JSON.parse(chunk.parts), metadata: JSON.parse(chunk.metadata) })
    }
    return (this.#statements.artifacts.all(tenant, id) as ArtifactRow[])
      .map(artifact => joinArtifact(artifact.artifact_id, JSON.parse(artifact.fields) as ArtifactFields, chunks.get(artifact.artifact_id) ?? []))
  }

  #setStatus (id: string, status: TaskStatus, now: number, scope: Scope): void {
    this.#statements.setStatus.run(status.state, json(status), statusTime(status, now), expiry(status, now, this.#ttl), scope.tenant, id)
  }

  #addMessage (taskId: string, message: Message, scope: Scope): void {
    this.#statements.addMessage.run(json(message), scope.tenant, taskId)
  }

  #writeArtifact (taskId: string, artifact: Artifact, append: boolean, scope: Scope): void {
    const { fields, chunk } = splitArtifact(artifact)
    const { tenant } = scope
    const written = this.#statements.upsertArtifact.run(artifact.artifactId, tenant, taskId, json(fields), tenant, taskId, append ? 1 : 0)
    if (written.changes === 0) return
    if (!append) this.#statements.deleteChunks.run(tenant, taskId, artifact.artifactId)
    this.#statements.addChunk.run(tenant, taskId, artifact.artifactId, json(chunk.parts), chunk.metadata === undefined ? null : json(chunk.metadata))
  }

  #sweep (now: number): void {
    for (const row of this.#statements.expiredTasks.all(now) as Array<{ tenant: string, id: string }>) {
      this.#statements.deleteTask.run(row.tenant, row.id)
      this.#statements.deleteTaskConfigs.run(row.tenant, row.id)
    }
  }
}

export class SqlitePushConfigStore implements PushConfigStore {
  readonly isolatesTenants = true
  readonly #busyTimeout: number
  readonly #statements

  /** `busyTimeout` as SqliteTaskStore's. */
  constructor (db: Database.Database, options: Pick<SqliteStoreOptions, 'busyTimeout'> = {}) {
    this.#busyTimeout = options.busyTimeout ?? DEFAULT_BUSY_TIMEOUT
    this.#statements = {
      set: db.prepare(`INSERT INTO a2a_push_configs (tenant, task_id, id, config) VALUES (?, ?, ?, ?)
        ON CONFLICT (tenant, task_id, id) DO UPDATE SET config = excluded.config`),
      get: db.prepare('SELECT config FROM a2a_push_configs WHERE tenant = ? AND task_id = ? AND id = ?').pluck(),
      // By id, in the BINARY collation (UTF-8 bytes: code point order, as the other stores), down
      // the UNIQUE (tenant, task_id, id) index. Not by `seq`: a rowid, which SQLite gives again once deleted.
      listFirst: db.prepare('SELECT id, config FROM a2a_push_configs WHERE tenant = ? AND task_id = ? ORDER BY id LIMIT ?'),
      listAfter: db.prepare('SELECT id, config FROM a2a_push_configs WHERE tenant = ? AND task_id = ? AND id > ? ORDER BY id LIMIT ?'),
      delete: db.prepare('DELETE FROM a2a_push_configs WHERE tenant = ? AND task_id = ? AND id = ?')
    }
  }

  async set (config: StoredPushConfig, scope: Scope): Promise<void> {
    return retrying(() => { this.#statements.set.run(scope.tenant, config.taskId, config.id, json(config)) }, this.#busyTimeout)
  }

  async get (taskId: string, id: string, scope: Scope): Promise<TaskPushNotificationConfig | undefined> {
    return retrying(() => {
      const config = this.#statements.get.get(scope.tenant, taskId, id) as string | undefined
      return config === undefined ? undefined : JSON.parse(config)
    }, this.#busyTimeout)
  }

  /** In the order of their ids, from the first id after the token's (`encodeIdCursor`). */
  async list (taskId: string, page: { pageSize: number, pageToken?: string }, scope: Scope): Promise<PushConfigPage> {
    return retrying(() => {
      const rows = (page.pageToken === undefined || page.pageToken === ''
        ? this.#statements.listFirst.all(scope.tenant, taskId, page.pageSize + 1)
        : this.#statements.listAfter.all(scope.tenant, taskId, decodeIdCursor(page.pageToken), page.pageSize + 1)) as Array<{ id: string, config: string }>
      const shown = rows.slice(0, page.pageSize)
      const last = shown[shown.length - 1]
      return {
        configs: shown.map(row => JSON.parse(row.config)),
        nextPageToken: rows.length > page.pageSize && last !== undefined ? encodeIdCursor(last.id) : ''
      }
    }, this.#busyTimeout)
  }

  async delete (taskId: string, id: string, scope: Scope): Promise<void> {
    return retrying(() => { this.#statements.delete.run(scope.tenant, taskId, id) }, this.#busyTimeout)
  }
}
