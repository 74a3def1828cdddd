// The store contract against the SQLite stores, on a real database file.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openSqliteStores } from '../lib/index.js'
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
  t.equal(raw.pragma('user_version', { simple: true }), 2)
})
