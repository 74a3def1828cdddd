// The store contract against the PostgreSQL stores, on the local server, each store in
// a schema of its own that teardown drops.
import pg from 'pg'
import t from 'tap'
import { migratePostgres, openPostgresStores } from '../lib/index.js'
import { dataOnlyRole, dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { storeContract } from './helpers/store-contract.js'

const url = await requirePostgres(t)
if (url !== undefined) {
  const schemas: string[] = []
  t.teardown(() => dropSchemas(url, schemas))
  let current = ''

  storeContract(t, {
    readsListView: true,
    async open (options = {}) {
      current = uniqueSchema('contract')
      schemas.push(current)
      return openPostgresStores({ connectionString: url, schema: current, ...options })
    },
    async reopen () {
      return openPostgresStores({ connectionString: url, schema: current })
    }
  })

  t.test('migrations: idempotent, safe to run from several processes at once, on a pool the caller owns', async t => {
    const schema = uniqueSchema('migrate')
    schemas.push(schema)
    const pools = [new pg.Pool({ connectionString: url }), new pg.Pool({ connectionString: url })]
    t.teardown(() => Promise.all(pools.map(pool => pool.end())))
    await Promise.all([...pools, ...pools].map(pool => migratePostgres(pool, schema)))
    const [pool] = pools as [pg.Pool]
    const versions = await pool.query(`SELECT version FROM ${pg.escapeIdentifier(schema)}.a2a_schema_version ORDER BY version`)
    t.same(versions.rows, [{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }], 'each applied once')
    const stores = await openPostgresStores({ pool, schema })
    await stores.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }, { tenant: '' })
    await stores.close()
    const still = await pool.query('SELECT 1 AS one')
    t.same(still.rows, [{ one: 1 }], 'close leaves a pool the caller owns open')
  })

  t.test('a role with data privileges only starts on a schema an administrator migrated: no CREATE is asked of it', async t => {
    const schema = uniqueSchema('dataonly')
    schemas.push(schema)
    const admin = new pg.Pool({ connectionString: url })
    t.teardown(() => admin.end())
    await migratePostgres(admin, schema)
    const S = pg.escapeIdentifier(schema)
    const asRole = await dataOnlyRole(t, url, `GRANT USAGE ON SCHEMA ${S} TO $ROLE;
      GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${S} TO $ROLE;
      GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${S} TO $ROLE`)
    const stores = await openPostgresStores({ connectionString: asRole, schema })
    t.teardown(() => stores.close())
    await stores.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }, { tenant: '' })
    t.equal((await stores.taskStore.get('x', { tenant: '' }))?.status.state, 'TASK_STATE_WORKING')
    const rolePool = new pg.Pool({ connectionString: asRole })
    t.teardown(() => rolePool.end())
    await t.rejects(migratePostgres(rolePool, uniqueSchema('dataonly_new')), /permission denied/, 'a schema not there yet still needs CREATE')
  })

  t.test('an artifact append is one inserted row and one more version of the task; the artifact row is not rewritten', async t => {
    const schema = uniqueSchema('append')
    schemas.push(schema)
    const stores = await openPostgresStores({ connectionString: url, schema })
    t.teardown(() => stores.close())
    const scope = { tenant: '' }
    await stores.taskStore.create({ id: 'a', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }, scope)
    const pool = new pg.Pool({ connectionString: url })
    t.teardown(() => pool.end())
    const S = pg.escapeIdentifier(schema)
    const taskRow = async () => (await pool.query(`SELECT context_id, state, status, status_ts, metadata, expires_at, version::int FROM ${S}.a2a_tasks WHERE id = 'a'`)).rows[0]
    const artifactRow = async () => (await pool.query(`SELECT xmin::text AS version FROM ${S}.a2a_artifacts WHERE artifact_id = 's'`)).rows[0].version
    const before = await taskRow()
    const append = (i: number) => stores.taskStore.update('a', { kind: 'artifact', artifact: { artifactId: 's', parts: [{ text: `${i}` }] }, append: true }, scope)
    await append(0)
    const artifactBefore = await artifactRow()
    for (let i = 1; i < 5; i++) await append(i)
    t.same(await taskRow(), { ...before, version: 6 }, 'the task row changed only its version, once per append')
    const indexed = await pool.query(`SELECT i.indexrelid::regclass::text AS name FROM pg_index i
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) WHERE i.indrelid = to_regclass($1) AND a.attname = 'version'`, [`${S}.a2a_tasks`])
    t.same(indexed.rows, [], 'no index holds the version: the update is HOT, it adds no index entry')
    t.equal(await artifactRow(), artifactBefore, 'the artifact row was only locked, never rewritten: a long stream leaves no dead rows')
    const chunks = await pool.query(`SELECT COUNT(*)::int AS n FROM ${S}.a2a_artifact_chunks`)
    t.equal(chunks.rows[0].n, 5, 'one row per chunk')
  })

  t.test('openPostgresStores refuses both or neither of connectionString and pool', async t => {
    await t.rejects(openPostgresStores({}), { name: 'TypeError', message: 'openPostgresStores needs exactly one of connectionString and pool' })
    const pool = new pg.Pool({ connectionString: url })
    t.teardown(() => pool.end())
    await t.rejects(openPostgresStores({ pool, connectionString: url }), { name: 'TypeError', message: 'openPostgresStores needs exactly one of connectionString and pool' })
  })
}
