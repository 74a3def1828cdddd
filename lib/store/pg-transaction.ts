// pg, loaded on first use (an optional peer dependency); the pools the stores and the bus make,
// with their timers; and one PostgreSQL transaction on a pooled connection: shared by the
// stores, the bus and the cluster store.
import type pg from 'pg'
import { optionalRequire } from '../optional-require.js'

/** The `pg` module, loaded on first use (an optional peer dependency); `user` names what needs it. */
export const loadPg = (user: string): typeof pg => optionalRequire<typeof pg>('pg', user)

/** The `connectionTimeout` of the stores and the bus, in ms: how long they wait for a connection of their own pool. */
export const DEFAULT_CONNECTION_TIMEOUT = 10_000
/** Their `queryTimeout`, in ms: how long a statement on a connection of their own pool waits for its answer. */
export const DEFAULT_QUERY_TIMEOUT = 10_000
/** Their `closeTimeout`, in ms: how long close() waits for the statements in progress before it cuts their connections. */
export const DEFAULT_CLOSE_TIMEOUT = 5_000
/**
 * TCP keepalive on the connections of their own pools, the first probe after this long idle:
 * it keeps a NAT's or a firewall's entry of an idle connection alive, and the kernel ends one
 * whose peer vanished.
 */
const KEEPALIVE_DELAY_MS = 10_000

/** setTimeout's longest delay: a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Why `value` is no timer of the stores or the bus (ms; 0 for no bound); undefined when it is one. */
export function timerProblem (value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return 'must be an integer >= 0'
  if (value > MAX_TIMER_MS) return `must be at most ${MAX_TIMER_MS} ms`
}

export interface PoolTimers {
  connectionTimeout: number
  queryTimeout: number
}

/** A pool the stores or the bus made from a connection string, and end. */
export interface OwnPool {
  pool: pg.Pool
  /**
   * Cuts every connection of the pool, in use or idle: what they wait for fails, and the pool
   * discards them. For close() past its bound: a statement on a connection that went silent
   * would hold `pool.end()` for ever.
   */
  cut (): void
}

export function ownPool (pgModule: typeof pg, connectionString: string, timers: PoolTimers): OwnPool {
  const pool = new pgModule.Pool({
    connectionString,
    connectionTimeoutMillis: timers.connectionTimeout,
    // pg's timer of each statement; past it the statement fails and pg-pool discards its
    // connection (pool.query gives it back with the error; `transaction` does the same).
    query_timeout: timers.queryTimeout,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS
  })
  // An idle connection that dies (a database restart) must not crash the process; the next query reports it.
  pool.on('error', () => {})
  const clients = new Set<pg.PoolClient>()
  pool.on('connect', client => clients.add(client))
  pool.on('remove', client => clients.delete(client))
  return { pool, cut: () => { for (const client of clients) cut(client) } }
}

/** Ends the client's connection at once, with no goodbye: what it waits for fails, and a pool discards it. */
export function cut (client: pg.Client): void {
  client.connection.stream.destroy()
}

/**
 * Does the table exist? Asked before any CREATE … IF NOT EXISTS: PostgreSQL checks the
 * privilege to create before it checks existence, so a role with data privileges only could
 * never start on a schema an administrator migrated.
 */
export async function tableExists (db: Pick<pg.Pool | pg.PoolClient, 'query'>, schema: string, table: string): Promise<boolean> {
  const { rows } = await db.query('SELECT to_regclass(format(\'%I.%I\', $1::text, $2::text)) IS NOT NULL AS found', [schema, table])
  return rows[0].found === true
}

/** pg's error for a statement past its `query_timeout`: the connection still waits for the answer. */
const QUERY_TIMEOUT_MESSAGE = 'Query read timeout'

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
    // Nor can one still waiting for a statement past its timeout: it is discarded as well.
    if ((error as Error).message === QUERY_TIMEOUT_MESSAGE) broken = error as Error
    else await client.query('ROLLBACK').catch((rollbackError: Error) => { broken = rollbackError })
    throw error
  } finally {
    client.off('error', onError)
    // A connection that cannot roll back is discarded, not returned to the pool.
    client.release(lost ?? broken)
  }
}
