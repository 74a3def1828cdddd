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
  // pg-pool hears the errors of its idle connections only: one lost while checked out here (a
  // reset, a terminated backend, a database restart or failover) emits 'error' on the client,
  // which unheard would end the process. The listener goes on as pool.connect hands the client
  // over, in its callback: the message read with the one that completed the connection (a
  // terminated backend's FATAL, in the same packet) is emitted before an await resumes.
  let lost: Error | undefined
  const onError = (error: Error): void => { lost = error }
  const client = await new Promise<pg.PoolClient>((resolve, reject) => {
    pool.connect((error, client) => {
      if (client === undefined) return reject(error)
      client.on('error', onError)
      resolve(client)
    })
  })
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    // A connection lost cannot roll back (PostgreSQL rolls back a transaction whose connection
    // ends): its error says what happened (a statement after it fails with pg's "not queryable").
    if (lost !== undefined) throw lost
    await client.query('ROLLBACK').catch((rollbackError: Error) => { broken = rollbackError })
    throw error
  } finally {
    client.off('error', onError)
    // A connection that cannot roll back is discarded, not returned to the pool.
    client.release(lost ?? broken)
  }
}
