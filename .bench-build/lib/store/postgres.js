// PostgreSQL stores (`pg`). The tables live in one schema, created by the migrations
// `openPostgresStores` runs at start-up (also exported as `migratePostgres`). Chunks of
// an artifact are rows: an append is one INSERT, never a rewrite of the task. Every
// change is one statement or one transaction whose first statement locks the row it
// changes, so concurrent writers, in one process or several, lose no update.
import pg from 'pg';
import { decodeCursor, encodeCursor } from './memory.js';
import { expiry, joinArtifact, joinTask, splitArtifact, statusTime, UNFINISHED_STATES } from './rows.js';
/** Each entry runs once, in order, recorded in `a2a_schema_version`. `S` stands for the quoted schema. */
const MIGRATIONS = [S => `
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
`];
/** Any number like this one serialises migrations of every schema across processes. */
const MIGRATION_LOCK = 0x0a2a;
/**
 * Creates the schema when missing and applies the migrations it lacks, in one transaction
 * under an advisory lock, so processes starting together migrate once.
 */
export async function migratePostgres(pool, schema = 'public') {
    const S = pg.escapeIdentifier(schema);
    await transaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, schema]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${S}`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${S}.a2a_schema_version (version INTEGER PRIMARY KEY)`);
        const { rows } = await client.query(`SELECT COALESCE(MAX(version), 0) AS version FROM ${S}.a2a_schema_version`);
        for (let version = Number(rows[0].version); version < MIGRATIONS.length; version++) {
            await client.query(MIGRATIONS[version](S));
            await client.query(`INSERT INTO ${S}.a2a_schema_version (version) VALUES ($1)`, [version + 1]);
        }
    });
}
/** Connects, migrates, and returns both stores over one pool. */
export async function openPostgresStores(options) {
    if ((options.pool === undefined) === (options.connectionString === undefined)) {
        throw new TypeError('openPostgresStores needs exactly one of connectionString and pool');
    }
    const owned = options.pool === undefined;
    const pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString });
    // An idle connection that dies (a database restart) must not crash the process; the next query reports it.
    if (owned)
        pool.on('error', () => { });
    const schema = options.schema ?? 'public';
    try {
        await migratePostgres(pool, schema);
    }
    catch (error) {
        if (owned)
            await pool.end();
        throw error;
    }
    return {
        taskStore: new PostgresTaskStore(pool, { ...options, schema }),
        pushConfigStore: new PostgresPushConfigStore(pool, schema),
        close: async () => { if (owned)
            await pool.end(); }
    };
}
async function transaction(pool, work) {
    const client = await pool.connect();
    let broken;
    try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
    }
    catch (error) {
        await client.query('ROLLBACK').catch((rollbackError) => { broken = rollbackError; });
        throw error;
    }
    finally {
        // A connection that cannot roll back is discarded, not returned to the pool.
        client.release(broken);
    }
}
const json = (value) => JSON.stringify(value);
export class PostgresTaskStore {
    isolatesTenants = true;
    #pool;
    #S;
    #ttl;
    #now;
    /** The select list of a whole task from the row `t`: history and artifacts aggregated in the same statement, so in one snapshot. */
    #taskColumns;
    constructor(pool, options = {}) {
        this.#pool = pool;
        const S = this.#S = pg.escapeIdentifier(options.schema ?? 'public');
        this.#ttl = options.ttl;
        this.#now = options.now ?? Date.now;
        this.#taskColumns = `t.id, t.context_id, t.status, t.status_ts, t.metadata,
      (SELECT json_agg(m.message ORDER BY m.seq) FROM ${S}.a2a_messages m WHERE m.tenant = t.tenant AND m.task_id = t.id) AS history,
      (SELECT json_agg(json_build_object('id', a.artifact_id, 'fields', a.fields, 'chunks',
          (SELECT json_agg(json_build_object('parts', c.parts, 'metadata', c.metadata) ORDER BY c.seq) FROM ${S}.a2a_artifact_chunks c
            WHERE c.tenant = a.tenant AND c.task_id = a.task_id AND c.artifact_id = a.artifact_id)) ORDER BY a.position)
        FROM ${S}.a2a_artifacts a WHERE a.tenant = t.tenant AND a.task_id = t.id) AS artifacts`;
    }
    async create(task, scope) {
        const S = this.#S;
        const now = this.#now();
        await transaction(this.#pool, async (client) => {
            if (this.#ttl !== undefined) {
                await client.query(`WITH gone AS (DELETE FROM ${S}.a2a_tasks WHERE expires_at <= $1 RETURNING tenant, id)
          DELETE FROM ${S}.a2a_push_configs p USING gone WHERE p.tenant = gone.tenant AND p.task_id = gone.id`, [now]);
            }
            await client.query(`INSERT INTO ${S}.a2a_tasks (tenant, id, context_id, state, status, status_ts, metadata, expires_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
                scope.tenant, task.id, task.contextId ?? null, task.status.state, json(task.status), statusTime(task.status, now),
                task.metadata === undefined ? null : json(task.metadata), expiry(task.status, now, this.#ttl)
            ]);
            for (const message of task.history ?? [])
                await this.#addMessage(client, task.id, message, scope);
            for (const artifact of task.artifacts ?? [])
                await this.#replaceArtifact(client, task.id, artifact, scope);
        });
    }
    async get(id, scope) {
        const { rows } = await this.#pool.query(`SELECT ${this.#taskColumns} FROM ${this.#S}.a2a_tasks t
      WHERE t.tenant = $1 AND t.id = $2 AND (t.expires_at IS NULL OR t.expires_at > $3)`, [scope.tenant, id, this.#now()]);
        return rows[0] === undefined ? undefined : assemble(rows[0]);
    }
    async update(id, change, scope) {
        switch (change.kind) {
            case 'status': {
                const now = this.#now();
                const { status } = change;
                await this.#pool.query(`UPDATE ${this.#S}.a2a_tasks SET state = $1, status = $2, status_ts = $3, expires_at = $4
          WHERE tenant = $5 AND id = $6`, [status.state, json(status), statusTime(status, now), expiry(status, now, this.#ttl), scope.tenant, id]);
                return;
            }
            case 'history':
                await this.#addMessage(this.#pool, id, change.message, scope);
                return;
            case 'artifact':
                if (change.append)
                    await this.#appendArtifact(id, change.artifact, scope);
                else
                    await transaction(this.#pool, client => this.#replaceArtifact(client, id, change.artifact, scope));
        }
    }
    async list(query, scope) {
        const values = [scope.tenant, this.#now()];
        const filters = ['tenant = $1', '(expires_at IS NULL OR expires_at > $2)'];
        if (query.contextId !== undefined)
            filters.push(`context_id = $${values.push(query.contextId)}`);
        if (query.status !== undefined)
            filters.push(`state = $${values.push(query.status)}`);
        if (query.statusTimestampAfter !== undefined)
            filters.push(`status_ts >= $${values.push(query.statusTimestampAfter)}`);
        let cursor = '';
        if (query.pageToken !== undefined && query.pageToken !== '') {
            const [statusTs, lastId] = decodeCursor(query.pageToken);
            cursor = `WHERE (status_ts, id) < ($${values.push(statusTs)}, $${values.push(lastId)})`;
        }
        const limit = `$${values.push(query.pageSize + 1)}`;
        const S = this.#S;
        // One statement: the count and the page come from one snapshot. The page holds one row
        // more than asked, which tells whether another follows; an empty page still yields the count.
        const { rows } = await this.#pool.query(`
      WITH matching AS (SELECT tenant, id, status_ts FROM ${S}.a2a_tasks WHERE ${filters.join(' AND ')}),
      page AS (SELECT * FROM matching ${cursor} ORDER BY status_ts DESC, id DESC LIMIT ${limit})
      SELECT (SELECT COUNT(*) FROM matching)::int AS total, p.*
      FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT ${this.#taskColumns} FROM page JOIN ${S}.a2a_tasks t USING (tenant, id)
      ) p ON true
      ORDER BY p.status_ts DESC, p.id DESC`, values);
        const found = rows.filter(row => row.id !== null);
        const page = found.slice(0, query.pageSize);
        const last = page[page.length - 1];
        return {
            tasks: page.map(assemble),
            totalSize: rows[0]?.total ?? 0,
            nextPageToken: found.length > query.pageSize && last !== undefined ? encodeCursor(Number(last.status_ts), last.id) : ''
        };
    }
    async listUnfinished() {
        const { rows } = await this.#pool.query(`SELECT tenant, id, context_id FROM ${this.#S}.a2a_tasks WHERE state = ANY($1)`, [UNFINISHED_STATES]);
        return rows.map(row => ({ taskId: row.id, contextId: row.context_id ?? '', scope: { tenant: row.tenant } }));
    }
    async #addMessage(db, taskId, message, scope) {
        await db.query(`INSERT INTO ${this.#S}.a2a_messages (tenant, task_id, message)
      SELECT tenant, id, $3 FROM ${this.#S}.a2a_tasks WHERE tenant = $1 AND id = $2`, [scope.tenant, taskId, json(message)]);
    }
    /**
     * Usually one statement: lock the artifact's row, then insert the chunk behind every chunk
     * before it. A row lock writes no new row version, so a long stream leaves no dead tuples
     * behind and each append stays O(1). A new artifact is created first (a concurrent creator
     * may win, which is as good), unless the task does not exist.
     */
    async #appendArtifact(taskId, artifact, scope) {
        const S = this.#S;
        const { fields, chunk } = splitArtifact(artifact);
        const key = [scope.tenant, taskId, artifact.artifactId];
        const append = () => this.#pool.query(`
      WITH artifact AS (
        SELECT tenant, task_id, artifact_id FROM ${S}.a2a_artifacts WHERE tenant = $1 AND task_id = $2 AND artifact_id = $3 FOR UPDATE
      )
      INSERT INTO ${S}.a2a_artifact_chunks (tenant, task_id, artifact_id, parts, metadata)
      SELECT tenant, task_id, artifact_id, $4, $5 FROM artifact`, [...key, json(chunk.parts), chunk.metadata === undefined ? null : json(chunk.metadata)]);
        if ((await append()).rowCount === 1)
            return;
        await this.#pool.query(`INSERT INTO ${S}.a2a_artifacts (tenant, task_id, artifact_id, fields)
      SELECT tenant, id, $3, $4 FROM ${S}.a2a_tasks WHERE tenant = $1 AND id = $2
      ON CONFLICT (tenant, task_id, artifact_id) DO NOTHING`, [...key, json(fields)]);
        // Without the task there is still no artifact, and this inserts nothing.
        await append();
    }
    /**
     * Inside a transaction: the upsert takes the artifact's row lock first, so the delete
     * that follows (a new statement, a new snapshot) sees every chunk committed before it.
     */
    async #replaceArtifact(client, taskId, artifact, scope) {
        const S = this.#S;
        const { fields, chunk } = splitArtifact(artifact);
        const key = [scope.tenant, taskId, artifact.artifactId];
        const upserted = await client.query(`INSERT INTO ${S}.a2a_artifacts (tenant, task_id, artifact_id, fields)
      SELECT tenant, id, $3, $4 FROM ${S}.a2a_tasks WHERE tenant = $1 AND id = $2
      ON CONFLICT (tenant, task_id, artifact_id) DO UPDATE SET fields = EXCLUDED.fields`, [...key, json(fields)]);
        if (upserted.rowCount === 0)
            return;
        await client.query(`WITH stale AS (DELETE FROM ${S}.a2a_artifact_chunks WHERE tenant = $1 AND task_id = $2 AND artifact_id = $3)
      INSERT INTO ${S}.a2a_artifact_chunks (tenant, task_id, artifact_id, parts, metadata) VALUES ($1, $2, $3, $4, $5)`, [...key, json(chunk.parts), chunk.metadata === undefined ? null : json(chunk.metadata)]);
    }
}
function assemble(row) {
    return joinTask({
        id: row.id,
        contextId: row.context_id,
        status: row.status,
        metadata: row.metadata,
        history: row.history ?? undefined,
        artifacts: (row.artifacts ?? []).map(artifact => joinArtifact(artifact.id, artifact.fields, (artifact.chunks ?? [])
            .map((chunk) => chunk.metadata === null ? { parts: chunk.parts } : { parts: chunk.parts, metadata: chunk.metadata })))
    });
}
export class PostgresPushConfigStore {
    isolatesTenants = true;
    #pool;
    #S;
    constructor(pool, schema = 'public') {
        this.#pool = pool;
        this.#S = pg.escapeIdentifier(schema);
    }
    async set(config, scope) {
        // A replaced config keeps its place in the list.
        await this.#pool.query(`INSERT INTO ${this.#S}.a2a_push_configs (tenant, task_id, id, config) VALUES ($1, $2, $3, $4)
      ON CONFLICT (tenant, task_id, id) DO UPDATE SET config = EXCLUDED.config`, [scope.tenant, config.taskId, config.id, json(config)]);
    }
    async get(taskId, id, scope) {
        const { rows } = await this.#pool.query(`SELECT config FROM ${this.#S}.a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [scope.tenant, taskId, id]);
        return rows[0]?.config;
    }
    async list(taskId, page, scope) {
        const after = page.pageToken === undefined || page.pageToken === '' ? 0 : decodeCursor(page.pageToken)[0];
        const { rows } = await this.#pool.query(`SELECT seq, config FROM ${this.#S}.a2a_push_configs
      WHERE tenant = $1 AND task_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`, [scope.tenant, taskId, after, page.pageSize + 1]);
        const shown = rows.slice(0, page.pageSize);
        const last = shown[shown.length - 1];
        return {
            configs: shown.map(row => row.config),
            nextPageToken: rows.length > page.pageSize && last !== undefined ? encodeCursor(Number(last.seq), '') : ''
        };
    }
    async delete(taskId, id, scope) {
        await this.#pool.query(`DELETE FROM ${this.#S}.a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [scope.tenant, taskId, id]);
    }
}
//# sourceMappingURL=postgres.js.map