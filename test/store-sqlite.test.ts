// The store contract against the SQLite stores, on a real database file.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { migrateSqlite, openSqliteStores, SqliteTaskStore } from '../lib/index.js'
import { storeContract } from './helpers/store-contract.js'

const dir = mkdtempSync(join(tmpdir(), 'a2a-sqlite-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
let current = ''

storeContract(t, {
  readsListView: true,
  async open (options = {}) {
    current = join(dir, `store-${++files}.db`)
    return openSqliteStores({ path: current, ...options })
  },
  async reopen () {
    return openSqliteStores({ path: current })
  }
})

t.test('the database is in WAL mode and migrations run once', async t => {
  const path = join(dir, 'wal.db')
  const first = openSqliteStores({ path })
  await first.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }, { tenant: '' })
  first.close()
  const again = openSqliteStores({ path })
  t.teardown(() => again.close())
  t.equal((await again.taskStore.get('x', { tenant: '' }))?.status.state, 'TASK_STATE_WORKING', 'reopening keeps the data')
  const { default: Database } = await import('better-sqlite3')
  const raw = new Database(path, { readonly: true })
  t.teardown(() => raw.close())
  t.equal(raw.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(raw.pragma('user_version', { simple: true }), 3)
})

t.test('an artifact write finds the task\'s last position in one step down an index, not over every artifact of the task', async t => {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(':memory:')
  t.teardown(() => db.close())
  migrateSqlite(db)
  const prepared: string[] = []
  const recording = new Proxy(db, {
    get (target, key) {
      if (key === 'prepare') return (sql: string) => { prepared.push(sql); return target.prepare(sql) }
      const value = Reflect.get(target, key)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  void new SqliteTaskStore(recording)
  const upsert = prepared.filter(sql => sql.startsWith('INSERT INTO a2a_artifacts '))
  t.equal(upsert.length, 1, 'one statement writes an artifact')
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${upsert[0] as string}`).all('a', '', 't', '{}', '', 't', 1) as Array<{ detail: string }>
  t.same(plan.map(step => step.detail), [
    'SEARCH a2a_tasks USING PRIMARY KEY (tenant=? AND id=?)',
    'SCALAR SUBQUERY 1',
    // MAX(position) over an index ending in position: SQLite reads its last entry for the task.
    'SEARCH a2a_artifacts USING COVERING INDEX a2a_artifacts_order (tenant=? AND task_id=?)',
    // The foreign key's check of the artifact's own chunks.
    'SEARCH a2a_artifact_chunks USING COVERING INDEX a2a_artifact_chunks_artifact (tenant=? AND task_id=? AND artifact_id=?)'
  ])
})

t.test('a database made before the artifact order index gets it on open; its tasks\' artifacts keep their order', async t => {
  const path = join(dir, 'before-order-index.db')
  const first = openSqliteStores({ path })
  const scope = { tenant: '' }
  await first.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, artifacts: [{ artifactId: 'a', parts: [{ text: 'a' }] }] }, scope)
  await first.taskStore.update('x', { kind: 'artifact', artifact: { artifactId: 'b', parts: [{ text: 'b' }] }, append: false }, scope)
  first.close()
  const { default: Database } = await import('better-sqlite3')
  const older = new Database(path)
  older.exec('DROP INDEX a2a_artifacts_order')
  older.pragma('user_version = 2')
  older.close()

  const again = openSqliteStores({ path })
  t.teardown(() => again.close())
  await again.taskStore.update('x', { kind: 'artifact', artifact: { artifactId: 'c', parts: [{ text: 'c' }] }, append: true }, scope)
  await again.taskStore.update('x', { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: 'a2' }] }, append: true }, scope)
  t.same((await again.taskStore.get('x', scope))?.artifacts, [
    { artifactId: 'a', parts: [{ text: 'a' }, { text: 'a2' }] },
    { artifactId: 'b', parts: [{ text: 'b' }] },
    { artifactId: 'c', parts: [{ text: 'c' }] }
  ])
  const raw = new Database(path, { readonly: true })
  t.teardown(() => raw.close())
  t.equal(raw.pragma('user_version', { simple: true }), 3)
  t.equal(raw.prepare("SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND name = 'a2a_artifacts_order'").pluck().get(), 1)
})
