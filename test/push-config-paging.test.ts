// ListTaskPushNotificationConfigs paging on each store (memory, SQLite, PostgreSQL): a task's
// configs are listed in the order of their ids (code point order, the same on every store), and
// a page token is the last id listed, so a config deleted or created between pages moves no
// other, and a token says nothing of other tenants.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import {
  isA2AError, MemoryPushConfigStore, openPostgresStores, openSqliteStores, type PushConfigStore, type Scope
} from '../lib/index.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'

interface Opened { store: PushConfigStore, close (): Promise<void> | void }
type Open = () => Promise<Opened>

const A: Scope = { tenant: '' }
const B: Scope = { tenant: 'tenant-b' }
const config = (taskId: string, id: string) => ({ id, taskId, url: `https://hooks.example/${encodeURIComponent(id)}` })
const ids = (configs: Array<{ id?: string }>) => configs.map(c => c.id)

/** Every id of the task, page by page; `between(page)` runs after each page. */
async function walk (store: PushConfigStore, taskId: string, pageSize: number, between: (page: number) => Promise<void> = async () => {}, scope = A) {
  const seen: Array<string | undefined> = []
  let token = ''
  let page = 0
  do {
    const listed = await store.list(taskId, token === '' ? { pageSize } : { pageSize, pageToken: token }, scope)
    seen.push(...ids(listed.configs))
    token = listed.nextPageToken
    await between(++page)
  } while (token !== '' && page < 100)
  return seen
}

function pagingSuite (t: Test, open: Open): void {
  async function fresh (t: Test): Promise<PushConfigStore> {
    const opened = await open()
    t.teardown(() => opened.close())
    return opened.store
  }

  t.test('a config already listed, deleted between pages, moves no other: each is listed once', async t => {
    const store = await fresh(t)
    for (let i = 0; i < 6; i++) await store.set(config('t', `c${i}`), A)
    const seen = await walk(store, 't', 2, async page => { if (page === 1) await store.delete('t', 'c0', A) })
    t.same(seen, ['c0', 'c1', 'c2', 'c3', 'c4', 'c5'])
  })

  t.test("the token outlives its config: a config created after that config and all later ones were deleted is on the next page when its id sorts after the token's, not when before", async t => {
    const store = await fresh(t)
    for (let i = 0; i < 6; i++) await store.set(config('t', `c${i}`), A)
    const first = await store.list('t', { pageSize: 2 }, A)
    t.same(ids(first.configs), ['c0', 'c1'])
    for (let i = 1; i < 6; i++) await store.delete('t', `c${i}`, A)
    // c9 first: SQLite would give it the deleted c1's rowid, which the old token held.
    await store.set(config('t', 'c9'), A)
    await store.set(config('t', 'a0'), A)
    t.same(await store.list('t', { pageSize: 2, pageToken: first.nextPageToken }, A), { configs: [config('t', 'c9')], nextPageToken: '' })
    t.same(ids((await store.list('t', { pageSize: 10 }, A)).configs), ['a0', 'c0', 'c9'])
  })

  t.test('in code point order of the ids (UTF-8 bytes), whatever the order of creation, in one page or many', async t => {
    const store = await fresh(t)
    // Above U+FFFF, U+E000–U+FFFF, Latin-1, and both cases (a locale would put "a" before "B").
    const created = ['x\u{1F600}', 'x\uFF21', 'xa', 'B', 'a', 'x\uE000', 'é', 'x', 'x\u{10FFFF}', 'x\uFFFF']
    for (const id of created) await store.set(config('t', id), A)
    const expected = ['B', 'a', 'x', 'xa', 'x\uE000', 'x\uFF21', 'x\uFFFF', 'x\u{1F600}', 'x\u{10FFFF}', 'é']
    t.same([...created].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))), expected, 'the order expected is UTF-8 byte order')
    t.same(ids((await store.list('t', { pageSize: 100 }, A)).configs), expected, 'one page')
    for (const pageSize of [1, 2, 3]) t.same(await walk(store, 't', pageSize), expected, `pages of ${pageSize}`)
    // A replaced config keeps its place.
    await store.set({ ...config('t', 'B'), token: 'again' }, A)
    t.same(ids((await store.list('t', { pageSize: 100 }, A)).configs), expected, 'a replaced config keeps its place')
  })

  t.test("a token tells nothing of other tenants: another tenant's configs, created or deleted, change none of a tenant's tokens", async t => {
    const store = await fresh(t)
    for (let i = 0; i < 3; i++) await store.set(config('x', `b${i}`), B)
    const before = (await store.list('x', { pageSize: 1 }, B)).nextPageToken
    for (let i = 0; i < 50; i++) await store.set(config('other', `o${i}`), A)
    for (let i = 0; i < 3; i++) await store.set(config('y', `b${i}`), B)
    const after = (await store.list('y', { pageSize: 1 }, B)).nextPageToken
    t.not(before, '')
    t.equal(after, before, 'the same ids, created after another tenant created 50 configs: the same token')
    for (let i = 0; i < 50; i++) await store.delete('other', `o${i}`, A)
    t.equal((await store.list('x', { pageSize: 1 }, B)).nextPageToken, before, 'nor after it deleted them')
    t.same(await walk(store, 'y', 1, undefined, B), ['b0', 'b1', 'b2'])
  })

  t.test('a token not made by this version is refused with InvalidParams (an offset or sequence number of an earlier one included)', async t => {
    const store = await fresh(t)
    for (let i = 0; i < 3; i++) await store.set(config('t', `c${i}`), A)
    const tokens = [Buffer.from(JSON.stringify([2, ''])).toString('base64url'), Buffer.from(JSON.stringify([1, 'c0'])).toString('base64url'), '%%%']
    for (const pageToken of tokens) {
      await store.list('t', { pageSize: 1, pageToken }, A).then(
        () => t.fail(`${pageToken}: expected InvalidParams`),
        (error: unknown) => t.ok(isA2AError(error) && error.row.jsonRpcCode === -32602, `${pageToken}: InvalidParams`)
      )
    }
  })
}

t.test('memory', async t => {
  pagingSuite(t, async () => ({ store: new MemoryPushConfigStore(), close () {} }))
})

t.test('SQLite', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'a2a-push-paging-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  pagingSuite(t, async () => {
    const stores = openSqliteStores({ path: join(dir, `store-${++files}.db`) })
    return { store: stores.pushConfigStore, close: () => stores.close() }
  })
})

t.test('PostgreSQL', async t => {
  const url = await requirePostgres(t)
  if (url === undefined) return
  const schemas: string[] = []
  t.teardown(() => dropSchemas(url, schemas))
  pagingSuite(t, async () => {
    const schema = uniqueSchema('pushpaging')
    schemas.push(schema)
    const stores = await openPostgresStores({ connectionString: url, schema })
    return { store: stores.pushConfigStore, close: () => stores.close() }
  })
})
