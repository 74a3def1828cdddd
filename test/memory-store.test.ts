// The in-memory stores: TTL eviction of terminal tasks, the capacity cap, tenant
// scoping, artifact appends, cursors.
import * as v8 from 'node:v8'
import t from 'tap'
import { MemoryPushConfigStore, MemoryTaskStore, type Task } from '../lib/index.js'

const a = { tenant: '' }
const b = { tenant: 'b' }
const task = (id: string, state: Task['status']['state'] = 'TASK_STATE_WORKING', timestamp = new Date().toISOString()): Task =>
  ({ id, contextId: 'c', status: { state, timestamp } })

t.test('terminal tasks expire after the TTL; active ones do not', async t => {
  let now = 1_000_000
  const store = new MemoryTaskStore({ ttl: 1000, now: () => now })
  await store.create(task('done', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('active'), a)
  now += 999
  t.equal((await store.get('done', a))?.id, 'done')
  now += 1
  t.equal(await store.get('done', a), undefined, 'expired at the TTL')
  t.equal((await store.get('active', a))?.id, 'active')
  await store.update('active', { kind: 'status', status: { state: 'TASK_STATE_FAILED', timestamp: new Date().toISOString() } }, a)
  now += 1000
  await store.create(task('later'), a)
  t.equal(store.size, 1, 'the sweep on create dropped the expired task')
  t.same((await store.list({ pageSize: 10 }, a)).tasks.map(x => x.id), ['later'])
})

t.test('the cap evicts the oldest terminal task, and refuses when none is terminal', async t => {
  const store = new MemoryTaskStore({ maxTasks: 2 })
  await store.create(task('old', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('active'), a)
  await store.create(task('new'), a)
  t.equal(await store.get('old', a), undefined)
  t.equal(store.size, 2)
  await t.rejects(store.create(task('one-too-many'), a), { code: 'A2A_ERR_UNAVAILABLE' })
})

t.test('maxTasksPerTenant: a full tenant has its own oldest terminal task evicted, or its new task refused; the others go on', async t => {
  const store = new MemoryTaskStore({ maxTasks: 10, maxTasksPerTenant: 2 })
  await store.create(task('b-old', 'TASK_STATE_COMPLETED'), b)
  await store.create(task('a-old', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('a-input', 'TASK_STATE_INPUT_REQUIRED'), a)
  await store.create(task('a-new'), a)
  t.equal(await store.get('a-old', a), undefined, 'the tenant\'s own oldest terminal task made room')
  t.ok(await store.get('b-old', b), 'not another tenant\'s, older though it is')
  await t.rejects(store.create(task('a-more'), a), { code: 'A2A_ERR_UNAVAILABLE', message: /the task store is full/ }, 'no terminal task of its own: refused')
  await store.create(task('b-1', 'TASK_STATE_INPUT_REQUIRED'), b)
  await store.create(task('b-2'), b)
  t.equal(await store.get('b-old', b), undefined, 'tenant b made room with its own')
  t.same((await store.list({ pageSize: 10 }, b)).tasks.map(x => x.id).sort(), ['b-1', 'b-2'])
  t.equal(store.size, 4)
  await store.update('a-input', { kind: 'status', status: { state: 'TASK_STATE_CANCELED', timestamp: new Date().toISOString() } }, a)
  await store.create(task('a-more'), a)
  t.equal(await store.get('a-input', a), undefined, 'a task of the tenant that ended later made room')
  t.same((await store.list({ pageSize: 10 }, a)).tasks.map(x => x.id).sort(), ['a-more', 'a-new'])
})

t.test('maxTasksPerTenant: terminal tasks gone by the TTL or created again running are not counted as the tenant\'s to evict', async t => {
  let now = 1_000_000
  const store = new MemoryTaskStore({ ttl: 1000, maxTasks: 10, maxTasksPerTenant: 2, now: () => now })
  await store.create(task('expired', 'TASK_STATE_COMPLETED'), a)
  now += 1000
  await store.create(task('x', 'TASK_STATE_COMPLETED'), a)
  t.equal(store.size, 1, 'the expired task swept')
  await store.create(task('x'), a)
  await store.create(task('y'), a)
  await t.rejects(store.create(task('z'), a), { code: 'A2A_ERR_UNAVAILABLE' }, 'x, running again, is not evicted as finished')
  t.equal((await store.get('x', a))?.status.state, 'TASK_STATE_WORKING')
  for (const id of ['x', 'y']) await store.update(id, { kind: 'status', status: { state: 'TASK_STATE_FAILED', timestamp: new Date().toISOString() } }, a)
  now += 1000
  await store.create(task('z'), a)
  t.equal(store.size, 1, 'the tenant emptied by the TTL')
  await store.create(task('w', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('v'), a)
  t.equal(await store.get('w', a), undefined, 'emptied and filled again, the tenant made room with its terminal w')
  t.ok(await store.get('z', a), 'not with the running z')
})

// v8.queryObjects (Node 20.13 on): how many objects of a constructor the heap holds, after a full GC.
const queryObjects = (v8 as { queryObjects?: (ctor: Function, options: { format: 'count' }) => number }).queryObjects
const heapObjects = (ctor: Function): number => (queryObjects as NonNullable<typeof queryObjects>)(ctor, { format: 'count' })

t.test('maxTasksPerTenant: the tasks a tenant\'s own cap evicts are let go, behind an older terminal task of another tenant too', { skip: queryObjects === undefined && 'v8.queryObjects needs Node 20.13' }, async t => {
  const store = new MemoryTaskStore({ maxTasks: 10_000, maxTasksPerTenant: 10 })
  store.createNow(task('a-old', 'TASK_STATE_COMPLETED'), a)
  const timestamp = new Date().toISOString()
  // A task of b with more artifacts than are searched through, its index made by a change, then ended.
  const cycle = (n: number): void => {
    const id = `b${n}`
    store.createNow({ ...task(id), artifacts: Array.from({ length: 9 }, (_, i) => ({ artifactId: `x${i}`, parts: [{ text: '' }] })) }, b)
    store.updateNow(id, { kind: 'artifact', artifact: { artifactId: 'x8', parts: [{ text: '!' }] }, append: true }, b)
    store.updateNow(id, { kind: 'status', status: { state: 'TASK_STATE_COMPLETED', timestamp } }, b)
  }
  for (let n = 0; n < 10; n++) cycle(n)
  const maps = heapObjects(Map)
  cycle(10)
  t.equal(store.getNow('b0', b), undefined, 'b\'s own cap evicted its oldest')
  t.equal(heapObjects(Map), maps, 'the evicted task\'s artifact index went with it: one made, one let go')
  const objects = heapObjects(Object)
  for (let n = 11; n < 2011; n++) cycle(n)
  const grown = heapObjects(Object) - objects
  t.ok(grown < 100, `2,000 tasks evicted by b's cap leave nothing behind (${grown} objects more; each kept 2 before)`)
  t.equal(store.size, 11)
  t.equal(store.getNow('a-old', a)?.id, 'a-old', 'the older task of a is still held')
  t.same((await store.list({ pageSize: 20 }, b)).tasks.map(x => x.id).sort(), Array.from({ length: 10 }, (_, i) => `b${2001 + i}`).sort())
})

t.test('maxTasksPerTenant: once the gone tasks are dropped from the terminal orders, the store and each tenant still evict their oldest terminal task first', async t => {
  const store = new MemoryTaskStore({ maxTasks: 30, maxTasksPerTenant: 5 })
  const c = { tenant: 'c' }
  const end = async (id: string, scope: { tenant: string }): Promise<void> => {
    await store.update(id, { kind: 'status', status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() } }, scope)
  }
  await store.create(task('a1', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('a2'), a)
  await store.create(task('a3', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('c1', 'TASK_STATE_COMPLETED'), c)
  // b's cap evicts from the middle of the store's order, ten times as many as the store holds.
  for (let n = 0; n < 100; n++) {
    await store.create(task(`b${n}`), b)
    await end(`b${n}`, b)
  }
  t.equal(store.size, 9)
  await store.create(task('b100'), b)
  t.equal(await store.get('b95', b), undefined, 'b\'s cap evicted its oldest terminal task')
  t.same((await store.list({ pageSize: 10 }, b)).tasks.map(x => x.id).sort(), ['b100', 'b96', 'b97', 'b98', 'b99'])
  await end('a2', a)
  // Filled with running tasks of tenants of one task each: then the store makes room, oldest terminal first.
  for (let n = 0; n < 21; n++) await store.create(task('d'), { tenant: `d${n}` })
  t.equal(store.size, 30)
  const expected: Array<[string, { tenant: string }]> = [['a1', a], ['a3', a], ['c1', c], ['b96', b], ['b97', b], ['b98', b], ['b99', b], ['a2', a]]
  for (let n = 0; n < expected.length; n++) {
    await store.create(task('e'), { tenant: `e${n}` })
    const held = []
    for (const [id, scope] of expected) if (await store.get(id, scope) !== undefined) held.push(id)
    t.same(held, expected.slice(n + 1).map(([id]) => id), `room made ${n + 1}: ${expected[n]?.[0]} evicted`)
  }
  await t.rejects(store.create(task('e'), { tenant: 'e-last' }), { code: 'A2A_ERR_UNAVAILABLE' }, 'no terminal task left: full')
  t.equal((await store.get('b100', b))?.id, 'b100', 'the running ones all held')
})

t.test('maxTasksPerTenant defaults to maxTasks: one tenant may fill the store', async t => {
  const store = new MemoryTaskStore({ maxTasks: 2 })
  await store.create(task('one'), a)
  await store.create(task('two'), a)
  await t.rejects(store.create(task('other'), b), { code: 'A2A_ERR_UNAVAILABLE' })
})

t.test('maxTasksPerTenant is checked', async t => {
  for (const bad of [0, 1.5, -1, 'x']) {
    t.throws(() => new MemoryTaskStore({ maxTasksPerTenant: bad as number }), { code: 'A2A_ERR_INVALID_OPTION', message: /maxTasksPerTenant: must be an integer >= 1/ }, String(bad))
  }
})

t.test('tenants are isolated', async t => {
  const store = new MemoryTaskStore()
  await store.create(task('same-id'), a)
  t.equal(await store.get('same-id', b), undefined)
  await store.create({ ...task('same-id'), contextId: 'tenant-b' }, b)
  t.equal((await store.get('same-id', b))?.contextId, 'tenant-b')
  t.equal((await store.get('same-id', a))?.contextId, 'c')
  t.equal((await store.list({ pageSize: 10 }, b)).totalSize, 1)
})

t.test('artifact chunks append in place; a chunk without append replaces', async t => {
  const store = new MemoryTaskStore()
  await store.create(task('t'), a)
  const stored = await store.get('t', a) as Task
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: '1' }] }, append: false }, a)
  const artifact = stored.artifacts?.[0]
  for (let i = 2; i <= 1000; i++) await store.update('t', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: String(i) }] }, append: true }, a)
  t.equal(stored.artifacts?.[0], artifact, 'the same artifact object grew: no copy per chunk')
  t.equal(artifact?.parts.length, 1000)
  // Chunks that each add a metadata key: merged into the stored artifact's own object, not
  // copied whole a chunk (which made such a stream quadratic); the event's object untouched.
  const firstMetadata = { k1: 1 }
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'x', parts: [], metadata: firstMetadata }, append: true }, a)
  const metadata = artifact?.metadata
  t.not(metadata, firstMetadata, 'the store holds its own metadata')
  for (let i = 2; i <= 100; i++) await store.update('t', { kind: 'artifact', artifact: { artifactId: 'x', parts: [], metadata: { [`k${i}`]: i } }, append: true }, a)
  t.equal(artifact?.metadata, metadata, 'the same metadata object grew: no copy per chunk')
  t.equal(Object.keys(metadata ?? {}).length, 100)
  t.same(firstMetadata, { k1: 1 })
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: 'fresh' }] }, append: false }, a)
  t.same(stored.artifacts, [{ artifactId: 'x', parts: [{ text: 'fresh' }] }])
})

t.test('artifacts keep their order; an append to an artifact the task lacks starts it; the store keeps its own parts', async t => {
  const store = new MemoryTaskStore()
  await store.create(task('t'), a)
  const stored = await store.get('t', a) as Task
  const first = { artifactId: 'x', parts: [{ text: 'x1' }] }
  await store.update('t', { kind: 'artifact', artifact: first, append: true }, a)
  first.parts.push({ text: 'not sent' })
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'y', parts: [{ text: 'y1' }] }, append: false }, a)
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: 'x2' }] }, append: true }, a)
  t.same(stored.artifacts, [
    { artifactId: 'x', parts: [{ text: 'x1' }, { text: 'x2' }] },
    { artifactId: 'y', parts: [{ text: 'y1' }] }
  ])
  t.not(stored.artifacts?.[0], first, 'the store holds a copy, not the event\'s artifact')
})

t.test('a task of many artifacts finds one by its id without a search through them: each id is read once, for the index', async t => {
  const store = new MemoryTaskStore()
  let reads = 0
  const artifacts = Array.from({ length: 1000 }, (_, i) => ({ get artifactId () { reads++; return `a${i}` }, parts: [{ text: '0' }] }))
  await store.create({ ...task('t'), artifacts }, a)
  for (let i = 1; i <= 100; i++) {
    await store.update('t', { kind: 'artifact', artifact: { artifactId: 'a999', parts: [{ text: String(i) }] }, append: true }, a)
    await store.update('t', { kind: 'artifact', artifact: { artifactId: 'a0', parts: [{ text: String(i) }] }, append: false }, a)
    await store.update('t', { kind: 'artifact', artifact: { artifactId: 'fresh', parts: [{ text: String(i) }] }, append: true }, a)
  }
  t.equal(reads, 1000, 'three hundred lookups read each stored id once')
  const stored = (await store.get('t', a))?.artifacts ?? []
  t.equal(stored.length, 1001)
  t.same(stored[0], { artifactId: 'a0', parts: [{ text: '100' }] }, 'replaced in place')
  t.equal(stored[999]?.parts.length, 101, 'every append on the last of the created ones')
  t.same(stored[1000], { artifactId: 'fresh', parts: Array.from({ length: 100 }, (_, i) => ({ text: String(i + 1) })) }, 'one made by an update is found too')
})

t.test('a task created again under its id with other artifacts: a change finds them, not the ones it had', async t => {
  const store = new MemoryTaskStore()
  const artifacts = (order: number[]) => order.map(i => ({ artifactId: `a${i}`, parts: [{ text: `${i}` }] }))
  const ids = Array.from({ length: 20 }, (_, i) => i)
  await store.create({ ...task('t'), artifacts: artifacts(ids) }, a)
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'a0', parts: [{ text: 'first life' }] }, append: true }, a)
  await store.create({ ...task('t'), artifacts: artifacts(ids.slice(5).reverse()) }, a)
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'a19', parts: [{ text: 'second life' }] }, append: true }, a)
  await store.update('t', { kind: 'artifact', artifact: { artifactId: 'a0', parts: [{ text: 'new' }] }, append: true }, a)
  const stored = (await store.get('t', a))?.artifacts ?? []
  t.same(stored.map(artifact => artifact.artifactId), [...ids.slice(5).reverse(), 0].map(i => `a${i}`))
  t.same(stored[0], { artifactId: 'a19', parts: [{ text: '19' }, { text: 'second life' }] })
  t.same(stored[15], { artifactId: 'a0', parts: [{ text: 'new' }] }, 'an id of the first life is a new artifact')
})

t.test('a tampered cursor is InvalidParams', async t => {
  const store = new MemoryTaskStore()
  await t.rejects(store.list({ pageSize: 1, pageToken: 'garbage' }, a), { code: 'A2A_ERR_INVALID_PARAMS' })
})

t.test('push configs: per task and tenant, replace by id, idempotent delete', async t => {
  const store = new MemoryPushConfigStore()
  await store.set({ id: '1', taskId: 't', url: 'https://a' }, a)
  await store.set({ id: '1', taskId: 't', url: 'https://b' }, a)
  t.same(await store.get('t', '1', a), { id: '1', taskId: 't', url: 'https://b' })
  t.equal(await store.get('t', '1', b), undefined)
  await store.delete('t', '1', a)
  await store.delete('t', '1', a)
  t.same(await store.list('t', { pageSize: 10 }, a), { configs: [], nextPageToken: '' })
})

t.test('hasConfigs says at once whether a task has a config now, per tenant: push delivery skips the lookup when it has none', async t => {
  const store = new MemoryPushConfigStore()
  t.equal(store.hasConfigs('t', a), false)
  await store.set({ id: '1', taskId: 't', url: 'https://a' }, a)
  await store.set({ id: '2', taskId: 't', url: 'https://b' }, a)
  t.equal(store.hasConfigs('t', a), true)
  t.equal(store.hasConfigs('t', b), false, 'another tenant\'s task of the same id has none')
  t.equal(store.hasConfigs('u', a), false, 'another task has none')
  await store.delete('t', '1', a)
  t.equal(store.hasConfigs('t', a), true, 'one is left')
  await store.delete('t', '2', a)
  t.equal(store.hasConfigs('t', a), false, 'the last one deleted')
})

t.test('a paired push-config store loses a task\'s configs when the task is evicted or expires', async t => {
  let now = 1_000_000
  const configs = new MemoryPushConfigStore()
  const store = new MemoryTaskStore({ maxTasks: 2, ttl: 1000, now: () => now, pushConfigStore: configs })
  await store.create(task('old', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('old', 'TASK_STATE_COMPLETED'), b)
  for (const scope of [a, b]) {
    await configs.set({ id: '1', taskId: 'old', url: 'https://a' }, scope)
    await configs.set({ id: '2', taskId: 'old', url: 'https://b' }, scope)
  }
  await store.create(task('new'), a)
  t.equal(await store.get('old', a), undefined, 'the oldest terminal task was evicted')
  t.equal(configs.hasConfigs('old', a), false, 'its configs went with it')
  t.equal(await configs.get('old', '1', a), undefined)
  t.same(await configs.list('old', { pageSize: 10 }, a), { configs: [], nextPageToken: '' })
  t.equal(configs.hasConfigs('old', b), true, 'another tenant\'s task of the same id keeps its own')
  now += 1000
  t.equal(await store.get('old', b), undefined, 'expired')
  t.equal(configs.hasConfigs('old', b), false, 'its configs went with it')
  await configs.set({ id: '1', taskId: 'new', url: 'https://a' }, a)
  await store.update('new', { kind: 'status', status: { state: 'TASK_STATE_FAILED', timestamp: new Date().toISOString() } }, a)
  now += 1000
  await store.create(task('later'), a)
  t.equal(configs.hasConfigs('new', a), false, 'the sweep of expired tasks on create takes their configs too')
})

t.test('a task created again under its id stays counted once and keeps its place among the terminal tasks', async t => {
  const store = new MemoryTaskStore({ maxTasks: 2 })
  await store.create(task('x', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('x', 'TASK_STATE_COMPLETED'), a)
  t.equal(store.size, 1)
  await store.create(task('y', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('z'), a)
  t.equal(await store.get('x', a), undefined, 'the oldest terminal task made room')
  t.equal((await store.get('y', a))?.id, 'y')
  t.equal(store.size, 2)
})

t.test('a finished task created again running is neither expired nor evicted as finished', async t => {
  let now = 1_000_000
  const store = new MemoryTaskStore({ ttl: 1000, maxTasks: 2, now: () => now })
  await store.create(task('x', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('x'), a)
  now += 1000
  await store.create(task('y', 'TASK_STATE_COMPLETED'), a)
  t.equal((await store.get('x', a))?.status.state, 'TASK_STATE_WORKING', 'past the TTL of its first life: still held')
  t.equal(store.size, 2)
  await store.create(task('z'), a)
  t.equal(await store.get('y', a), undefined, 'the full store made room with the finished y')
  t.equal((await store.get('x', a))?.id, 'x', 'not with the running x')
  await store.update('x', { kind: 'status', status: { state: 'TASK_STATE_FAILED', timestamp: new Date().toISOString() } }, a)
  now += 1000
  await store.create(task('w'), a)
  t.equal(await store.get('x', a), undefined, 'finished again, it expires after its TTL')
})

t.test('a task created again after its eviction takes a new place among the terminal tasks', async t => {
  const store = new MemoryTaskStore({ maxTasks: 2 })
  await store.create(task('x', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('y', 'TASK_STATE_COMPLETED'), a)
  await store.create(task('z'), a)
  t.equal(await store.get('x', a), undefined, 'x made room for z')
  await store.update('z', { kind: 'status', status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() } }, a)
  await store.create(task('x', 'TASK_STATE_COMPLETED'), a)
  t.equal(await store.get('y', a), undefined, 'the oldest task still held made room, not the new x')
  t.equal((await store.get('x', a))?.id, 'x')
  await store.create(task('w'), a)
  t.equal(await store.get('z', a), undefined, 'then z, which ended before the new x')
  t.same((await store.list({ pageSize: 10 }, a)).tasks.map(x => x.id).sort(), ['w', 'x'])
})
