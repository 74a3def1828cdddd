// The store contract against the SQLite stores, on a real database file; a lock another
// process holds is waited for on timers, up to busyTimeout.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { toA2AError } from '../lib/errors/index.js'
import { migrateSqlite, openSqliteStores, SqliteTaskStore } from '../lib/index.js'
import { userMessage } from './helpers/server.js'
import { storeContract } from './helpers/store-contract.js'
import { timeoutsMadeIn } from './helpers/timers.js'

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

t.test('a call waiting for another process\'s lock waits on timers: the event loop runs meanwhile, and the call is done once the lock is released', async t => {
  const path = join(dir, 'locked.db')
  const stores = openSqliteStores({ path, busyTimeout: 3000 })
  t.teardown(() => stores.close())
  const scope = { tenant: '' }
  await stores.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED' } }, scope)
  const holder = await lockHolder(t, path)
  const seen: string[] = []
  // Each is a whole transaction, tried again until the lock is free.
  const writes = Promise.all([
    stores.taskStore.create({ id: 'y', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, history: [userMessage('hi')] }, scope),
    stores.taskStore.update('x', { kind: 'status', status: { state: 'TASK_STATE_WORKING' } }, scope),
    stores.pushConfigStore.set({ taskId: 'x', id: 'p', url: 'https://example.com/hook' }, scope),
    stores.pushConfigStore.delete('x', 'gone', scope)
  ]).then(() => seen.push('written'), (error: Error) => seen.push(`failed: ${error.message}`))
  // Another call of the process, served meanwhile: with SQLite's busy handler the writes above
  // would hold the event loop until the lock is free, or busyTimeout runs out (the lock would be
  // released only by this turn of the loop).
  await new Promise(resolve => setTimeout(resolve, 20))
  seen.push('timer')
  t.equal((await stores.taskStore.get('x', scope))?.status.state, 'TASK_STATE_SUBMITTED', 'reads are not held (WAL)')
  await holder.release()
  await writes
  t.same(seen, ['timer', 'written'])
  t.equal((await stores.taskStore.get('x', scope))?.status.state, 'TASK_STATE_WORKING')
  t.same((await stores.taskStore.get('y', scope))?.history?.map(message => message.parts), [[{ text: 'hi' }]], 'the transaction ran whole, once')
  t.same((await stores.pushConfigStore.list('x', { pageSize: 10 }, scope)).configs.map(config => config.id), ['p'])
})

t.test('past busyTimeout a call fails with SQLITE_BUSY, an Unavailable with a RetryInfo; busyTimeout 0 waits not at all', async t => {
  const path = join(dir, 'locked-long.db')
  const scope = { tenant: '' }
  const patient = openSqliteStores({ path, busyTimeout: 150 })
  t.teardown(() => patient.close())
  const impatient = openSqliteStores({ path, busyTimeout: 0 })
  t.teardown(() => impatient.close())
  await patient.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED' } }, scope)
  const holder = await lockHolder(t, path)
  t.teardown(() => holder.release())

  const timeouts = timeoutsMadeIn(t, 'store/sqlite')
  const failure = await patient.taskStore.update('x', { kind: 'status', status: { state: 'TASK_STATE_WORKING' } }, scope).catch((error: unknown) => error)
  t.match(failure, { code: 'SQLITE_BUSY' })
  t.ok(timeouts.length > 1 && timeouts.every(timeout => timeout.fired), 'tried again on timers')
  t.ok(timeouts.reduce((sum, timeout) => sum + timeout.delay, 0) <= 150, 'for busyTimeout in all, at most')
  const error = toA2AError(failure)
  t.equal(error.row.httpStatus, 503)
  t.same(error.details, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }])

  timeouts.length = 0
  await t.rejects(impatient.pushConfigStore.set({ taskId: 'x', id: 'p', url: 'https://example.com/hook' }, scope), { code: 'SQLITE_BUSY' })
  t.same(timeouts, [], 'busyTimeout 0: failed at once')
  await t.rejects(impatient.taskStore.update('x', { kind: 'status', status: { state: 'TASK_STATE_WORKING' } }, scope), { code: 'SQLITE_BUSY' })
})

t.test('an error other than SQLITE_BUSY is not tried again', async t => {
  const path = join(dir, 'not-busy.db')
  const scope = { tenant: '' }
  const stores = openSqliteStores({ path })
  t.teardown(() => stores.close())
  await stores.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } }, scope)
  const holder = await lockHolder(t, path)
  const timeouts = timeoutsMadeIn(t, 'store/sqlite')
  // Busy first, then (the lock released) the task is found terminal: that error, at once.
  const update = t.rejects(stores.taskStore.update('x', { kind: 'status', status: { state: 'TASK_STATE_WORKING' } }, scope),
    { code: 'A2A_ERR_UNSUPPORTED_OPERATION', state: 'TASK_STATE_COMPLETED' })
  await holder.release()
  await update
  t.ok(timeouts.length >= 1)
  await t.rejects(stores.taskStore.create({ id: 'x', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }, scope), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })
})

t.test('busyTimeout is an integer >= 0', async t => {
  for (const busyTimeout of [-1, 1.5, '5000; DROP TABLE x']) {
    t.throws(() => openSqliteStores({ path: ':memory:', busyTimeout: busyTimeout as number }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option busyTimeout: must be an integer >= 0' })
  }
})

/** Another process holding the write lock of the database at `path` (BEGIN EXCLUSIVE) until `release()`. */
async function lockHolder (t: Test, path: string): Promise<{ release (): Promise<void> }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `
    import Database from 'better-sqlite3'
    const db = new Database(process.argv[1])
    db.exec('BEGIN EXCLUSIVE')
    process.stdout.write('locked')
    process.stdin.resume().once('end', () => { db.exec('COMMIT'); db.close() })
  `, path], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  t.teardown(() => { child.kill() })
  await once(child.stdout, 'data')
  return { release: async () => { child.stdin.end(); await exited } }
}
