// pg, loaded on first use (an optional peer dependency), and one PostgreSQL transaction on a
// pooled connection: shared by the stores, the bus and the cluster store.
import type pg from 'pg'
import { optionalRequire } from '../optional-require.js'

/** The `pg` module, loaded on first use (an optional peer dependency); `user` names what needs it. */
export const loadPg = (user: string): typeof pg => optionalRequire<typeof pg>('pg', user)

/** The `connectionTimeout` of the stores and the bus, in ms: how long they wait for a connection of their own pool. */
export const DEFAULT_CONNECTION_TIMEOUT = 10_000

/**
 * Does the table exist? Asked before any CREATE … IF NOT EXISTS: PostgreSQL checks the
 * privilege to create before it checks existence, so a role with data privileges only could
 * never start on a schema an administrator migrated.
 */
export async function tableExists (db: Pick<pg.Pool | pg.PoolClient, 'query'>, schema: string, table: string): Promise<boolean> {
  const { rows } = await db.query('SELECT to_regclass(format(\'%I.%I\', $1::text, $2::text)) IS NOT NULL AS found', [schema, table])
  return rows[0].found === true
}

export async function transaction<T> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => { broken = rollbackError })
    throw error
  } finally {
    // A connection that cannot roll back is discarded, not returned to the pool.
    client.release(broken)
  }
}
