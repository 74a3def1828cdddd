// PostgreSQL stores (`pg`). The tables live in one schema, created by the migrations
// `openPostgresStores` runs at start-up (also exported as `migratePostgres`). Chunks of
// an artifact are rows: an append is one INSERT, never a rewrite of the artifact. Every
// change is one statement or one transaction whose first step adds one to the task's
// version, which locks the task's row: the changes of a task, from one process or several,
// apply one at a time, lose no update, and are numbered in the order they commit. That
// step writes nothing to a terminal task, so its terminal state is its last change.
import type pg from 'pg'
import type { Artifact, Message, Task, TaskPushNotificationConfig, TaskState, TaskStatus } from '../schema/wire.js'
import { TaskTerminalError } from '../errors/index.js'
import { isTerminal } from '../handler/states.js'
import { PostgresClusterStore } from '../cluster/postgres.js'
import { settlesWithin } from '../settles.js'
import { decodeCursor, decodeIdCursor, encodeCursor, encodeIdCursor } from './memory.js'
import {
  DEFAULT_CLOSE_TIMEOUT, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_QUERY_TIMEOUT, loadPg, ownPool, tableExists, timerProblem, transaction
} from './pg-transaction.js'
import { expiry, joinArtifact, joinTask, NOT_TERMINAL, splitArtifact, statusTime, UNFINISHED_STATES, type ArtifactFields, type Chunk } from './rows.js'
import type {
  ListTasksPage, ListTasksQuery, PushConfigPage, PushConfigStore, Scope, StoredPushConfig, TaskChange, TaskStore, TaskView, UnfinishedTask, VersionedTask
} from './types.js'

export interface PostgresStoreOptions {
  /** A connection string, e.g. `postgres://user@127.0.0.1:5432/db`. Give this or `pool`. */
  connectionString?: string
  /** An existing pool; the stores do not end it. Give this or `connectionString`. */
  pool?: pg.Pool
  /** The schema holding the tables; created when missing. Default `public`. */
  schema?: string
  /**
   * With `connectionString`: how long a query waits for a connection of the pool the stores
   * make, in ms; past it the call is Unavailable (a database that stopped answering holds no
   * call for ever). 0 waits without end. Default 10,000.
   */
  connectionTimeout?: number
  /**
   * With `connectionString`: how long a statement on a connection of the stores' pool waits for
   * its answer, in ms; past it the call is Unavailable and the connection is discarded (a
   * database, or a network path, that went silent on an open connection holds no call, and
   * no connection, for ever). 0 waits without end. Default 10,000.
   */
  queryTimeout?: number
  /**
   * With `connectionString`: how long close() waits for the statements in progress, in ms,
   * before it cuts their connections. 0 waits without end. Default 5,000.
   */
  closeTimeout?: number
  /** How long a terminal task is kept, in ms. Default: forever. */
  ttl?: number
  /** Clock, for tests. */
  now?: () => number
}

export interface PostgresStores {
  taskStore: PostgresTaskStore
  pushConfigStore: PostgresPushConfigStore
  /** For the `cluster` option: leases, messageIds and the push outbox, in the same schema. */
  clusterStore: PostgresClusterStore
  /** Ends the pool when the stores created it, cutting its connections still in use after `closeTimeout`. */
  close (): Promise<void>
}

type Queryable = Pick<pg.Pool, 'query'>

/** Each entry runs once, in order, recorded in `a2a_schema_version`. `S` stands for the quoted schema. */
const MIGRATIONS: Array<(S: string) => string> = [S => `
  CREATE TABLE ${S}.a2a_tasks (
    tenant TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    context_id TEXT,
    state TEXT NOT NULL,
    status JSON NOT NULL,
    status_ts BIGINT NOT NULL,
    metadata JSON,
    expires_at BIGINT,
    PRIMARY KEY (tenant, id)
  );
  CREATE INDEX a2a_tasks_recent ON ${S}.a2a_tasks (tenant, status_ts DESC, id DESC);
  CREATE INDEX a2a_tasks_context ON ${S}.a2a_tasks (tenant, context_id, status_ts DESC, id DESC);
  CREATE INDEX a2a_tasks_expiry ON ${S}.a2a_tasks (expires_at) WHERE expires_at IS NOT NULL;
  CREATE INDEX a2a_tasks_unfinished ON ${S}.a2a_tasks (state) WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');
  CREATE TABLE ${S}.a2a_messages (
    seq BIGSERIAL PRIMARY KEY,
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    message JSON NOT NULL,
    FOREIGN KEY (tenant, task_id) REFERENCES ${S}.a2a_tasks ON DELETE CASCADE
  );
  CREATE INDEX a2a_messages_task ON ${S}.a2a_messages (tenant, task_id, seq);
  CREATE TABLE ${S}.a2a_artifacts (
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    artifact_id TEXT COLLATE "C" NOT NULL,
    position BIGSERIAL,
    fields JSON NOT NULL,
    PRIMARY KEY (tenant, task_id, artifact_id),
    FOREIGN KEY (tenant, task_id) REFERENCES ${S}.a2a_tasks ON DELETE CASCADE
  );
  CREATE TABLE ${S}.a2a_artifact_chunks (
    seq BIGSERIAL PRIMARY KEY,
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    artifact_id TEXT COLLATE "C" NOT NULL,
    parts JSON NOT NULL,
    metadata JSON,
    FOREIGN KEY (tenant, task_id, artifact_id) REFERENCES ${S}.a2a_artifacts ON DELETE CASCADE
  );
  CREATE INDEX a2a_artifact_chunks_artifact ON ${S}.a2a_artifact_chunks (tenant, task_id, artifact_id, seq);
  CREATE TABLE ${S}.a2a_push_configs (
    seq BIGSERIAL PRIMARY KEY,
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    config JSON NOT NULL,
    UNIQUE (tenant, task_id, id)
  );
`, S => `
  -- The cluster (lib/cluster/postgres.ts): live instances, who runs which task, the
  -- messageIds already started, and push deliveries not yet done.
  CREATE TABLE ${S}.a2a_instances (
    id TEXT COLLATE "C" PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
  );
  CREATE TABLE ${S}.a2a_task_leases (
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    owner TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, task_id, owner)
  );
  CREATE INDEX a2a_task_leases_owner ON ${S}.a2a_task_leases (owner);
  CREATE TABLE ${S}.a2a_message_ids (
    tenant TEXT COLLATE "C" NOT NULL,
    message_id TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant, message_id)
  );
  CREATE INDEX a2a_message_ids_age ON ${S}.a2a_message_ids (created_at);
  CREATE TABLE ${S}.a2a_push_outbox (
    seq BIGSERIAL PRIMARY KEY,
    owner TEXT COLLATE "C" NOT NULL,
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    context_id TEXT NOT NULL,
    config_id TEXT COLLATE "C" NOT NULL,
    event JSON NOT NULL
  );
  CREATE INDEX a2a_push_outbox_owner ON ${S}.a2a_push_outbox (owner, seq);
`, S => `
  -- A task's version (TaskStore): 1 when created, one more per change. No index holds it,
  -- so adding one is a HOT update of the task's row.
  ALTER TABLE ${S}.a2a_tasks ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
`, S => `
  -- Per task and push config, the task's version up to which its deliveries are recorded in
  -- the outbox: a taker sends the task to a config left behind (lib/cluster/postgres.ts).
  CREATE TABLE ${S}.a2a_push_marks (
    tenant TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    config_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (tenant, task_id, config_id)
  );
`]

/** Any number like this one serialises migrations of every schema across processes. */
const MIGRATION_LOCK = 0x0a2a

/**
 * Creates the schema when missing and applies the migrations it lacks, in one transaction
 * under an advisory lock, so processes starting together migrate once.
 */
export async function migratePostgres (pool: pg.Pool, schema = 'public'): Promise<void> {
  const S = loadPg('migratePostgres').escapeIdentifier(schema)
  await transaction(pool, async client => {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, schema])
    if (!(await tableExists(client, schema, 'a2a_schema_version'))) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${S}`)
      await client.query(`CREATE TABLE ${S}.a2a_schema_version (version INTEGER PRIMARY KEY)`)
    }
    const { rows } = await client.query(`SELECT COALESCE(MAX(version), 0) AS version FROM ${S}.a2a_schema_version`)
    for (let version = Number(rows[0].version); version < MIGRATIONS.length; version++) {
      await client.query((MIGRATIONS[version] as (S: string) => string)(S))
      await client.query(`INSERT INTO ${S}.a2a_schema_version (version) VALUES ($1)`, [version + 1])
    }
  })
}

/** Connects, migrates, and returns both stores over one pool. */
export async function openPostgresStores (options: PostgresStoreOptions): Promise<PostgresStores> {
  if ((options.pool === undefined) === (options.connectionString === undefined)) {
    throw new TypeError('openPostgresStores needs exactly one of connectionString and pool')
  }
  const {
    connectionTimeout = DEFAULT_CONNECTION_TIMEOUT, queryTimeout = DEFAULT_QUERY_TIMEOUT, closeTimeout = DEFAULT_CLOSE_TIMEOUT
  } = options
  for (const [name, value] of Object.entries({ connectionTimeout, queryTimeout, closeTimeout })) {
    const problem = timerProblem(value)
    if (problem !== undefined) throw new TypeError(`openPostgresStores: ${name} ${problem}`)
  }
  const own = options.pool === undefined
    ? ownPool(loadPg('openPostgresStores'), options.connectionString as string, { connectionTimeout, queryTimeout })
    : undefined
  const pool = own?.pool ?? options.pool as pg.Pool
  const schema = options.schema ?? 'public'
  try {
    await migratePostgres(pool, schema)
  } catch (error) {
    await own?.pool.end()
    throw error
  }
  return {
    taskStore: new PostgresTaskStore(pool, { ...options, schema }),
    pushConfigStore: new PostgresPushConfigStore(pool, schema),
    clusterStore: new PostgresClusterStore(pool, schema),
    close: async () => {
      // Past closeTimeout, a statement still waiting (on a connection gone silent) has its connection cut.
      if (own !== undefined && !(await settlesWithin(own.pool.end(), closeTimeout))) own.cut()
    }
  }
}

interface TaskRow {
  id: string
  context_id: string | null
  status: TaskStatus
  status_ts: string
  metadata: Record<string, unknown> | null
  /** BIGINT, as text. */
  version: string
  history: Message[] | null
  artifacts: Array<{ id: string, fields: ArtifactFields, chunks: Array<{ parts: Artifact['parts'], metadata: Record<string, unknown> | null }> | null }> | null
}

const json = (value: unknown): string => JSON.stringify(value)

export class PostgresTaskStore implements TaskStore {
  readonly isolatesTenants = true
  readonly #pool: pg.Pool
  readonly #S: string
  readonly #ttl: number | undefined
  readonly #now: () => number
  /** The parts of a task's select list from the row `t` (`#columns`): the row's own columns, the history, the artifacts. */
  readonly #rowColumns: string
  readonly #historyColumn: string
  readonly #artifactsColumn: string
  /** The start of the UPDATE adding one to the version of task `$2` of tenant `$1` (and locking its row), unless it is terminal. */
  readonly #nextVersion: string

  constructor (pool: pg.Pool, options: Pick<PostgresStoreOptions, 'schema' | 'ttl' | 'now'> = {}) {
    this.#pool = pool
    const S = this.#S = loadPg('PostgresTaskStore').escapeIdentifier(options.schema ?? 'public')
    this.#ttl = options.ttl
    this.#now = options.now ?? Date.now
    this.#rowColumns = 't.id, t.context_id, t.status, t.status_ts, t.metadata, t.version'
    this.#historyColumn = `(SELECT json_agg(m.message ORDER BY m.seq) FROM ${S}.a2a_messages m WHERE m.tenant = t.tenant AND m.task_id = t.id) AS history`
    this.#artifactsColumn = `(SELECT json_agg(json_build_object('id', a.artifact_id, 'fields', a.fields, 'chunks',
          (SELECT json_agg(json_build_object('parts', c.parts, 'metadata', c.metadata) ORDER BY c.seq) FROM ${S}.a2a_artifact_chunks c
            WHERE c.tenant = a.tenant AND c.task_id = a.task_id AND c.artifact_id = a.artifact_id)) ORDER BY a.position)
        FROM ${S}.a2a_artifacts a WHERE a.tenant = t.tenant AND a.task_id = t.id) AS artifacts`
    this.#nextVersion = `UPDATE ${S}.a2a_tasks SET version = version + 1 WHERE tenant = $1 AND id = $2 AND ${NOT_TERMINAL}`
  }

  async create (task: Task, scope: Scope): Promise<number> {
    const S = this.#S
    const now = this.#now()
    await transaction(this.#pool, async client => {
      if (this.#ttl !== undefined) {
        await client.query(`WITH gone AS (DELETE FROM ${S}.a2a_tasks WHERE expires_at <= $1 RETURNING tenant, id)
          DELETE FROM ${S}.a2a_push_configs p USING gone WHERE p.tenant = gone.tenant AND p.task_id = gone.id`, [now])
      }
      await client.query(`INSERT INTO ${S}.a2a_tasks (tenant, id, context_id, state, status, status_ts, metadata, expires_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        scope.tenant, task.id, task.contextId ?? null, task.status.state, json(task.status), statusTime(task.status, now),
        task.metadata === undefined ? null : json(task.metadata), expiry(task.status, now, this.#ttl)
      ])
      for (const message of task.history ?? []) await this.#addMessage(client, task.id, message, scope)
      for (const artifact of task.artifacts ?? []) await this.#replaceArtifact(client, task.id, artifact, scope)
    })
    return 1
  }

  async get (id: string, scope: Scope, view: TaskView = {}): Promise<Task | undefined> {
    const row = await this.#read(id, scope, view)
    return row === undefined ? undefined : assemble(row)
  }

  async getVersioned (id: string, scope: Scope): Promise<VersionedTask | undefined> {
    const row = await this.#read(id, scope, {})
    return row === undefined ? undefined : { task: assemble(row), version: Number(row.version) }
  }

  /** The task's row with what `view` shows, history and artifacts aggregated in one statement, so in one snapshot with its version. */
  async #read (id: string, scope: Scope, view: TaskView): Promise<TaskRow | undefined> {
    const values: unknown[] = [scope.tenant, id, this.#now()]
    const { rows } = await this.#pool.query<TaskRow>(`SELECT ${this.#columns(view, values)} FROM ${this.#S}.a2a_tasks t
      WHERE t.tenant = $1 AND t.id = $2 AND (t.expires_at IS NULL OR t.expires_at > $3)`, values)
    return rows[0]
  }

  /**
   * The select list of a task from the row `t`, reading only what `view` shows: the latest
   * `historyLength` messages (a parameter pushed onto `values`), no artifacts when `includeArtifacts` is false.
   */
  #columns (view: Pick<ListTasksQuery, 'historyLength' | 'includeArtifacts'>, values: unknown[]): string {
    const { historyLength, includeArtifacts } = view
    const history = historyLength === undefined
      ? this.#historyColumn
      : historyLength === 0
        ? 'NULL::json AS history'
        : `(SELECT json_agg(l.message ORDER BY l.seq) FROM (SELECT m.message, m.seq FROM ${this.#S}.a2a_messages m
            WHERE m.tenant = t.tenant AND m.task_id = t.id ORDER BY m.seq DESC LIMIT $${values.push(historyLength)}) l) AS history`
    return `${this.#rowColumns}, ${history}, ${includeArtifacts === false ? 'NULL::json AS artifacts' : this.#artifactsColumn}`
  }


  async update (id: string, change: TaskChange, scope: Scope): Promise<number | undefined> {
    return (await this.#write(id, change, scope)) ?? await this.#refused(id, scope)
  }

  /** The version after the change; undefined when nothing was written (no such task, or a terminal one). */
  async #write (id: string, change: TaskChange, scope: Scope): Promise<number | undefined> {
    const S = this.#S
    switch (change.kind) {
      case 'status': {
        const now = this.#now()
        const { status } = change
        return versionOf(await this.#pool.query(`UPDATE ${S}.a2a_tasks SET state = $1, status = $2, status_ts = $3, expires_at = $4, version = version + 1
          WHERE tenant = $5 AND id = $6 AND ${NOT_TERMINAL} RETURNING version`, [status.state, json(status), statusTime(status, now), expiry(status, now, this.#ttl), scope.tenant, id]))
      }
      case 'history':
        return versionOf(await this.#pool.query(`WITH task AS (${this.#nextVersion} RETURNING tenant, id, version),
          added AS (INSERT INTO ${S}.a2a_messages (tenant, task_id, message) SELECT tenant, id, $3 FROM task)
          SELECT version FROM task`, [scope.tenant, id, json(change.message)]))
      case 'artifact':
        if (change.append) return await this.#appendArtifact(id, change.artifact, scope)
        return await transaction(this.#pool, async client => {
          const version = versionOf(await client.query(`${this.#nextVersion} RETURNING version`, [scope.tenant, id]))
          if (version !== undefined) await this.#replaceArtifact(client, id, change.artifact, scope)
          return version
        })
    }
  }

  /** Nothing was written: undefined when the task does not exist (or, created since, did not then), TaskTerminalError when it ended. */
  async #refused (id: string, scope: Scope): Promise<undefined> {
    const { rows } = await this.#pool.query<{ state: TaskState }>(`SELECT state FROM ${this.#S}.a2a_tasks WHERE tenant = $1 AND id = $2`, [scope.tenant, id])
    const state = rows[0]?.state
    if (state !== undefined && isTerminal(state)) throw new TaskTerminalError(id, state)
    return undefined
  }


  async list (query: ListTasksQuery, scope: Scope): Promise<ListTasksPage> {
    const values: unknown[] = [scope.tenant, this.#now()]
    const filters = ['tenant = $1', '(expires_at IS NULL OR expires_at > $2)']
    if (query.contextId !== undefined) filters.push(`context_id = $${values.push(query.contextId)}`)
    if (query.status !== undefined) filters.push(`state = $${values.push(query.status)}`)
    if (query.statusTimestampAfter !== undefined) filters.push(`status_ts >= $${values.push(query.statusTimestampAfter)}`)
    let cursor = ''
    if (query.pageToken !== undefined && query.pageToken !== '') {
      const [statusTs, lastId] = decodeCursor(query.pageToken)
      cursor = `WHERE (status_ts, id) < ($${values.push(statusTs)}, $${values.push(lastId)})`
    }
    const limit = `$${values.push(query.pageSize + 1)}`
    const S = this.#S
    // Only what the answer shows is read: the latest `historyLength` messages, the artifacts when asked for.
    const columns = this.#columns(query, values)
    // One statement: the count and the page come from one snapshot. The page holds one row
    // more than asked, which tells whether another follows; an empty page still yields the count.
    const { rows } = await this.#pool.query<TaskRow & { total: number }>(`
      WITH matching AS (SELECT tenant, id, status_ts FROM ${S}.a2a_tasks WHERE ${filters.join(' AND ')}),
      page AS (SELECT * FROM matching ${cursor} ORDER BY status_ts DESC, id DESC LIMIT ${limit})
      SELECT (SELECT COUNT(*) FROM matching)::int AS total, p.*
      FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT ${columns} FROM page JOIN ${S}.a2a_tasks t USING (tenant, id)
      ) p ON true
      ORDER BY p.status_ts DESC, p.id DESC`, values)
    const found = rows.filter(row => row.id !== null)
    const page = found.slice(0, query.pageSize)
    const last = page[page.length - 1]
    return {
      tasks: page.map(assemble),
      totalSize: rows[0]?.total ?? 0,
      nextPageToken: found.length > query.pageSize && last !== undefined ? encodeCursor(Number(last.status_ts), last.id) : ''
    }
  }

  async listUnfinished (): Promise<UnfinishedTask[]> {
    const { rows } = await this.#pool.query<{ tenant: string, id: string, context_id: string | null }>(
      `SELECT tenant, id, context_id FROM ${this.#S}.a2a_tasks WHERE state = ANY($1)`, [UNFINISHED_STATES])
    return rows.map(row => ({ taskId: row.id, contextId: row.context_id ?? '', scope: { tenant: row.tenant } }))
  }

  async #addMessage (db: Queryable, taskId: string, message: Message, scope: Scope): Promise<void> {
    await db.query(`INSERT INTO ${this.#S}.a2a_messages (tenant, task_id, message)
      SELECT tenant, id, $3 FROM ${this.#S}.a2a_tasks WHERE tenant = $1 AND id = $2`, [scope.tenant, taskId, json(message)])
  }

  /**
   * Usually one statement: the task's next version (its row lock), then the chunk behind
   * every chunk before it. Neither the artifact's row nor its earlier chunks are rewritten,
   * so each append stays O(1). A new artifact is created with its first chunk under the
   * task's row lock (a concurrent creator may win, which is as good): a task that ended
   * meanwhile gets no artifact.
   */
  async #appendArtifact (taskId: string, artifact: Artifact, scope: Scope): Promise<number | undefined> {
    const S = this.#S
    const { fields, chunk } = splitArtifact(artifact)
    const key = [scope.tenant, taskId, artifact.artifactId]
    const chunkRow = [...key, json(chunk.parts), chunk.metadata === undefined ? null : json(chunk.metadata)]
    const appended = versionOf(await this.#pool.query(`
      WITH task AS (
        ${this.#nextVersion} AND EXISTS (SELECT FROM ${S}.a2a_artifacts WHERE tenant = $1 AND task_id = $2 AND artifact_id = $3)
        RETURNING version
      ), chunk AS (
        INSERT INTO ${S}.a2a_artifact_chunks (tenant, task_id, artifact_id, parts, metadata) SELECT $1, $2, $3, $4, $5 FROM task
      )
      SELECT version FROM task`, chunkRow))
    if (appended !== undefined) return appended
    return await transaction(this.#pool, async client => {
      const version = versionOf(await client.query(`${this.#nextVersion} RETURNING version`, [scope.tenant, taskId]))
      if (version === undefined) return undefined
      await client.query(`INSERT INTO ${S}.a2a_artifacts (tenant, task_id, artifact_id, fields) VALUES ($1, $2, $3, $4)
        ON CONFLICT (tenant, task_id, artifact_id) DO NOTHING`, [...key, json(fields)])
      await client.query(`INSERT INTO ${S}.a2a_artifact_chunks (tenant, task_id, artifact_id, parts, metadata) VALUES ($1, $2, $3, $4, $5)`, chunkRow)
      return version
    })
  }

  /**
   * Inside a transaction that holds the task's row lock (its new version; or its creation),
   * so the delete (a new statement, a new snapshot) sees every chunk committed before it.
   */
  async #replaceArtifact (client: pg.PoolClient, taskId: string, artifact: Artifact, scope: Scope): Promise<void> {
    const S = this.#S
    const { fields, chunk } = splitArtifact(artifact)
    const key = [scope.tenant, taskId, artifact.artifactId]
    const upserted = await client.query(`INSERT INTO ${S}.a2a_artifacts (tenant, task_id, artifact_id, fields)
      SELECT tenant, id, $3, $4 FROM ${S}.a2a_tasks WHERE tenant = $1 AND id = $2
      ON CONFLICT (tenant, task_id, artifact_id) DO UPDATE SET fields = EXCLUDED.fields`, [...key, json(fields)])
    if (upserted.rowCount === 0) return
    await client.query(`WITH stale AS (DELETE FROM ${S}.a2a_artifact_chunks WHERE tenant = $1 AND task_id = $2 AND artifact_id = $3)
      INSERT INTO ${S}.a2a_artifact_chunks (tenant, task_id, artifact_id, parts, metadata) VALUES ($1, $2, $3, $4, $5)`,
    [...key, json(chunk.parts), chunk.metadata === undefined ? null : json(chunk.metadata)])
  }
}

/** The version a write RETURNING it reports; undefined when no task was written. */
function versionOf (result: pg.QueryResult<{ version: string }>): number | undefined {
  const row = result.rows[0]
  return row === undefined ? undefined : Number(row.version)
}

function assemble (row: TaskRow): Task {
  return joinTask({
    id: row.id,
    contextId: row.context_id,
    status: row.status,
    metadata: row.metadata,
    history: row.history ?? undefined,
    artifacts: (row.artifacts ?? []).map(artifact => joinArtifact(artifact.id, artifact.fields, (artifact.chunks ?? [])
      .map((chunk): Chunk => chunk.metadata === null ? { parts: chunk.parts } : { parts: chunk.parts, metadata: chunk.metadata })))
  })
}

export class PostgresPushConfigStore implements PushConfigStore {
  readonly isolatesTenants = true
  readonly #pool: pg.Pool
  readonly #S: string

  constructor (pool: pg.Pool, schema = 'public') {
    this.#pool = pool
    this.#S = loadPg('PostgresPushConfigStore').escapeIdentifier(schema)
  }

  async set (config: StoredPushConfig, scope: Scope): Promise<void> {
    await this.#pool.query(`INSERT INTO ${this.#S}.a2a_push_configs (tenant, task_id, id, config) VALUES ($1, $2, $3, $4)
      ON CONFLICT (tenant, task_id, id) DO UPDATE SET config = EXCLUDED.config`, [scope.tenant, config.taskId, config.id, json(config)])
  }

  async get (taskId: string, id: string, scope: Scope): Promise<TaskPushNotificationConfig | undefined> {
    const { rows } = await this.#pool.query(`SELECT config FROM ${this.#S}.a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`,
      [scope.tenant, taskId, id])
    return rows[0]?.config
  }

  /**
   * In the order of their ids, from the first id after the token's (`encodeIdCursor`). "C" in
   * the comparison and the order: code point order, as the other stores (a database's default
   * collation is its locale's), down the UNIQUE (tenant, task_id, id) index, also "C".
   */
  async list (taskId: string, page: { pageSize: number, pageToken?: string }, scope: Scope): Promise<PushConfigPage> {
    const values: unknown[] = [scope.tenant, taskId]
    const after = page.pageToken === undefined || page.pageToken === '' ? '' : `AND id COLLATE "C" > $${values.push(decodeIdCursor(page.pageToken))}`
    const { rows } = await this.#pool.query<{ id: string, config: TaskPushNotificationConfig }>(`SELECT id, config FROM ${this.#S}.a2a_push_configs
      WHERE tenant = $1 AND task_id = $2 ${after} ORDER BY id COLLATE "C" LIMIT $${values.push(page.pageSize + 1)}`, values)
    const shown = rows.slice(0, page.pageSize)
    const last = shown[shown.length - 1]
    return {
      configs: shown.map(row => row.config),
      nextPageToken: rows.length > page.pageSize && last !== undefined ? encodeIdCursor(last.id) : ''
    }
  }

  async delete (taskId: string, id: string, scope: Scope): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#S}.a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [scope.tenant, taskId, id])
  }
}
