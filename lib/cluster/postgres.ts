// The cluster store on PostgreSQL, in the schema of the task store (its tables come with the
// stores' migrations). Every time is the database's clock, so the instances' clocks may
// differ. An instance is alive while its row's `expires_at` is ahead; a lease is a row per
// task and instance running it, live while its instance is.
import type pg from 'pg'
import type { StreamResponse } from '../schema/wire.js'
import { TERMINAL_STATES } from '../handler/states.js'
import { loadPg, transaction } from '../store/pg-transaction.js'
import { UNFINISHED_STATES } from '../store/rows.js'
import type { ClusterStore, OutboxDelivery, TaskKey } from './types.js'

/** Serialises the claims of one task across instances (two sweepers finding the same orphan). */
const CLAIM_LOCK_SEED = 0x0a2a

export class PostgresClusterStore implements ClusterStore {
  readonly #pool: pg.Pool
  readonly #S: string
  /** SQL: the instance named by the column `owner` of `alias` is alive. */
  readonly #alive: (alias: string) => string

  constructor (pool: pg.Pool, schema = 'public') {
    this.#pool = pool
    const S = this.#S = loadPg('PostgresClusterStore').escapeIdentifier(schema)
    this.#alive = alias => `EXISTS (SELECT 1 FROM ${S}.a2a_instances i WHERE i.id = ${alias}.owner AND i.expires_at > clock_timestamp())`
  }

  async register (instance: string, ttl: number): Promise<void> {
    await this.#pool.query(`INSERT INTO ${this.#S}.a2a_instances (id, expires_at) VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond')
      ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at`, [instance, ttl])
  }

  async renew (instance: string, ttl: number): Promise<boolean> {
    const { rowCount } = await this.#pool.query(`UPDATE ${this.#S}.a2a_instances SET expires_at = clock_timestamp() + $2 * interval '1 millisecond'
      WHERE id = $1 AND expires_at > clock_timestamp()`, [instance, ttl])
    return rowCount === 1
  }

  async deregister (instance: string): Promise<void> {
    await this.#pool.query(`WITH leases AS (DELETE FROM ${this.#S}.a2a_task_leases WHERE owner = $1)
      DELETE FROM ${this.#S}.a2a_instances WHERE id = $1`, [instance])
  }

  async nextExpiry (instance: string): Promise<number | undefined> {
    const { rows } = await this.#pool.query<{ ms: number | null }>(`SELECT (EXTRACT(EPOCH FROM MIN(expires_at) - clock_timestamp()) * 1000)::float8 AS ms
      FROM ${this.#S}.a2a_instances WHERE id <> $1 AND expires_at > clock_timestamp()`, [instance])
    const ms = rows[0]?.ms
    return ms === null || ms === undefined ? undefined : Math.max(0, Math.ceil(ms))
  }

  async acquire (instance: string, key: TaskKey): Promise<void> {
    await this.#pool.query(`INSERT INTO ${this.#S}.a2a_task_leases (tenant, task_id, owner) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [key.tenant, key.taskId, instance])
  }

  async release (instance: string, key: TaskKey): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#S}.a2a_task_leases WHERE tenant = $1 AND task_id = $2 AND owner = $3`, [key.tenant, key.taskId, instance])
  }

  async releaseAll (instance: string): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#S}.a2a_task_leases WHERE owner = $1`, [instance])
  }

  async owners (key: TaskKey): Promise<string[]> {
    const { rows } = await this.#pool.query<{ owner: string }>(`SELECT l.owner FROM ${this.#S}.a2a_task_leases l
      WHERE l.tenant = $1 AND l.task_id = $2 AND ${this.#alive('l')}`, [key.tenant, key.taskId])
    return rows.map(row => row.owner)
  }

  async orphans (limit: number): Promise<TaskKey[]> {
    const S = this.#S
    const { rows } = await this.#pool.query<{ tenant: string, task_id: string }>(`
      (SELECT DISTINCT l.tenant, l.task_id FROM ${S}.a2a_task_leases l WHERE NOT ${this.#alive('l')} LIMIT $1)
      UNION
      (SELECT t.tenant, t.id FROM ${S}.a2a_tasks t WHERE t.state = ANY($2)
        AND NOT EXISTS (SELECT 1 FROM ${S}.a2a_task_leases l WHERE l.tenant = t.tenant AND l.task_id = t.id) LIMIT $1)`,
    [limit, UNFINISHED_STATES])
    return rows.map(row => ({ tenant: row.tenant, taskId: row.task_id }))
  }

  async claim (instance: string, key: TaskKey): Promise<boolean> {
    const S = this.#S
    const values = [key.tenant, key.taskId]
    return await transaction(this.#pool, async client => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1 || \'/\' || $2, $3))', [...values, CLAIM_LOCK_SEED])
      await client.query(`DELETE FROM ${S}.a2a_task_leases l WHERE l.tenant = $1 AND l.task_id = $2 AND NOT ${this.#alive('l')}`, values)
      const held = await client.query(`SELECT 1 FROM ${S}.a2a_task_leases WHERE tenant = $1 AND task_id = $2 LIMIT 1`, values)
      if (held.rowCount !== 0) return false
      await client.query(`INSERT INTO ${S}.a2a_task_leases (tenant, task_id, owner) VALUES ($1, $2, $3)`, [...values, instance])
      return true
    })
  }

  async claimMessage (tenant: string, messageId: string, taskId: string): Promise<string | undefined> {
    const S = this.#S
    const inserted = await this.#pool.query(`INSERT INTO ${S}.a2a_message_ids (tenant, message_id, task_id) VALUES ($1, $2, $3)
      ON CONFLICT DO NOTHING`, [tenant, messageId, taskId])
    if (inserted.rowCount === 1) return undefined
    const { rows } = await this.#pool.query<{ task_id: string }>(`SELECT task_id FROM ${S}.a2a_message_ids WHERE tenant = $1 AND message_id = $2`,
      [tenant, messageId])
    // Forgotten (tidied) between the two statements: this call records it.
    return rows[0]?.task_id ?? await this.claimMessage(tenant, messageId, taskId)
  }

  async reclaimMessage (tenant: string, messageId: string, from: string, to: string): Promise<boolean> {
    const { rowCount } = await this.#pool.query(`UPDATE ${this.#S}.a2a_message_ids SET task_id = $4, created_at = clock_timestamp()
      WHERE tenant = $1 AND message_id = $2 AND task_id = $3`, [tenant, messageId, from, to])
    return rowCount === 1
  }

  async forgetMessage (tenant: string, messageId: string, taskId: string): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#S}.a2a_message_ids WHERE tenant = $1 AND message_id = $2 AND task_id = $3`, [tenant, messageId, taskId])
  }

  async recordDeliveries (instance: string, key: TaskKey & { contextId: string }, event: StreamResponse, configIds: string[], version?: number): Promise<string[]> {
    const S = this.#S
    // One statement: the marks move only with the rows they account for.
    const { rows } = await this.#pool.query<{ seq: string, config_id: string }>(`WITH marks AS (
        INSERT INTO ${S}.a2a_push_marks (tenant, task_id, config_id, version) SELECT $2, $3, config_id, $7 FROM unnest($5::text[]) AS config_id
        WHERE $7::bigint IS NOT NULL
        ON CONFLICT (tenant, task_id, config_id) DO UPDATE SET version = GREATEST(${S}.a2a_push_marks.version, EXCLUDED.version))
      INSERT INTO ${S}.a2a_push_outbox
      (owner, tenant, task_id, context_id, config_id, event) SELECT $1, $2, $3, $4, config_id, $6 FROM unnest($5::text[]) AS config_id
      RETURNING seq, config_id`, [instance, key.tenant, key.taskId, key.contextId, configIds, JSON.stringify(event), version ?? null])
    const ids = new Map(rows.map(row => [row.config_id, row.seq]))
    return configIds.map(id => ids.get(id) as string)
  }

  async markConfig (key: TaskKey, configId: string, version: number): Promise<void> {
    await this.#pool.query(`INSERT INTO ${this.#S}.a2a_push_marks (tenant, task_id, config_id, version) VALUES ($1, $2, $3, $4)
      ON CONFLICT DO NOTHING`, [key.tenant, key.taskId, configId, version])
  }

  async configsBehind (key: TaskKey, configIds: string[], version: number): Promise<string[]> {
    const { rows } = await this.#pool.query<{ config_id: string }>(`SELECT c.config_id FROM unnest($3::text[]) WITH ORDINALITY AS c (config_id, n)
      LEFT JOIN ${this.#S}.a2a_push_marks m ON m.tenant = $1 AND m.task_id = $2 AND m.config_id = c.config_id
      WHERE COALESCE(m.version, 0) < $4 ORDER BY c.n`, [key.tenant, key.taskId, configIds, version])
    return rows.map(row => row.config_id)
  }

  async ownsDelivery (instance: string, id: string): Promise<boolean> {
    const { rowCount } = await this.#pool.query(`SELECT 1 FROM ${this.#S}.a2a_push_outbox WHERE seq = $1 AND owner = $2`, [id, instance])
    return rowCount === 1
  }

  async finishDelivery (id: string): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#S}.a2a_push_outbox WHERE seq = $1`, [id])
  }

  async takeDeliveries (instance: string, key?: TaskKey): Promise<OutboxDelivery[]> {
    const S = this.#S
    // The deliveries of a task some lease still names wait for the claim of that task, whose
    // claimer sends them before the task's last event. Locked in order, so takers never deadlock;
    // a second taker waits, then finds them live-owned.
    const values: unknown[] = [instance]
    const scope = key === undefined
      ? `NOT EXISTS (SELECT 1 FROM ${S}.a2a_task_leases l WHERE l.tenant = p.tenant AND l.task_id = p.task_id)`
      : `p.tenant = $${values.push(key.tenant)} AND p.task_id = $${values.push(key.taskId)}`
    const { rows } = await this.#pool.query<{ seq: string, tenant: string, task_id: string, context_id: string, config_id: string, event: StreamResponse }>(`
      UPDATE ${S}.a2a_push_outbox o SET owner = $1
      WHERE o.seq IN (SELECT p.seq FROM ${S}.a2a_push_outbox p WHERE p.owner <> $1 AND NOT ${this.#alive('p')} AND ${scope} ORDER BY p.seq FOR UPDATE)
      RETURNING o.seq, o.tenant, o.task_id, o.context_id, o.config_id, o.event`, values)
    return rows
      .sort((a, b) => Number(a.seq) - Number(b.seq))
      .map(row => ({ id: row.seq, tenant: row.tenant, taskId: row.task_id, contextId: row.context_id, configId: row.config_id, event: row.event }))
  }

  async tidy (messageIdTtl: number): Promise<void> {
    const S = this.#S
    await this.#pool.query(`DELETE FROM ${S}.a2a_message_ids WHERE created_at < clock_timestamp() - $1 * interval '1 millisecond'`, [messageIdTtl])
    await this.#pool.query(`DELETE FROM ${S}.a2a_instances i WHERE i.expires_at < clock_timestamp()
      AND NOT EXISTS (SELECT 1 FROM ${S}.a2a_task_leases l WHERE l.owner = i.id)
      AND NOT EXISTS (SELECT 1 FROM ${S}.a2a_push_outbox o WHERE o.owner = i.id)`)
    // A task ended (or expired) that no lease names has no more events, and no taker: its marks are of no use.
    await this.#pool.query(`DELETE FROM ${S}.a2a_push_marks m
      WHERE NOT EXISTS (SELECT 1 FROM ${S}.a2a_tasks t WHERE t.tenant = m.tenant AND t.id = m.task_id AND t.state <> ALL($1))
      AND NOT EXISTS (SELECT 1 FROM ${S}.a2a_task_leases l WHERE l.tenant = m.tenant AND l.task_id = m.task_id)`, [TERMINAL_STATES])
  }
}
