// One PostgreSQL transaction on a pooled connection, shared by the stores and the cluster store.
import type pg from 'pg'

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
