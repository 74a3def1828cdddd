// The store contract: the same assertions run against every TaskStore / PushConfigStore
// pair (memory, SQLite, PostgreSQL). Each store's test file only says how to open it.
import type { Test } from 'tap'
import {
  isA2AError, TaskTerminalError, type Artifact, type Message, type PushConfigStore, type Scope, type Task, type TaskChange, type TaskStatus, type TaskStore
} from '../../lib/index.js'

export interface OpenedStores {
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
  close (): Promise<void> | void
}

export interface StoreFactory {
  /** A fresh, empty pair of stores. */
  open (options?: { ttl?: number, now?: () => number }): Promise<OpenedStores>
  /**
   * Durable stores: another pair over the same database as the last `open` (a second
   * connection, as a second process would have).
   */
  reopen?: () => Promise<OpenedStores>
  /** Reads no more than a ListTasks or GetTask view shows (the SQL stores); the memory store hands back whole tasks, which cost nothing to read. */
  readsListView?: boolean
}

const A: Scope = { tenant: '' }
const B: Scope = { tenant: 'tenant-b' }
const T0 = Date.parse('2025-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0 + ms).toISOString()

let counter = 0
const message = (text: string, role: Message['role'] = 'ROLE_USER', taskId = 'task'): Message =>
  ({ messageId: `msg-${++counter}`, role, parts: [{ text }], taskId, contextId: 'ctx' })
const status = (state: TaskStatus['state'], ms: number): TaskStatus => ({ state, timestamp: at(ms) })
const newTask = (id: string, state: TaskStatus['state'], ms: number, contextId = 'ctx'): Task =>
  ({ id, contextId, status: status(state, ms) })

function rejectsInvalidParams (t: Test, promise: Promise<unknown>, what: string) {
  return promise.then(
    () => t.fail(`${what}: expected InvalidParams`),
    (error: unknown) => t.ok(isA2AError(error) && error.row.jsonRpcCode === -32602, `${what}: InvalidParams`)
  )
}

export function storeContract (t: Test, factory: StoreFactory): void {
  async function fresh (t: Test, options?: { ttl?: number, now?: () => number }): Promise<OpenedStores> {
    const stores = await factory.open(options)
    t.teardown(() => stores.close())
    return stores
  }

  t.test('create and get: the task comes back whole; an unknown id is undefined', async t => {
    const { taskStore } = await fresh(t)
    const task: Task = {
      id: 'full',
      contextId: 'ctx-full',
      status: { state: 'TASK_STATE_WORKING', timestamp: at(1), message: message('busy', 'ROLE_AGENT', 'full') },
      history: [message('one', 'ROLE_USER', 'full'), message('two', 'ROLE_AGENT', 'full')],
      artifacts: [
        { artifactId: 'a1', name: 'first', parts: [{ text: 'x' }, { data: { n: 1 } }], metadata: { k: 'v' } },
        { artifactId: 'a2', parts: [{ url: 'https://example.com/f', mediaType: 'text/plain' }] }
      ],
      metadata: { origin: 'test', nested: { deep: [1, 2] } }
    }
    await taskStore.create(task, A)
    t.same(await taskStore.get('full', A), task)
    const bare = newTask('bare', 'TASK_STATE_SUBMITTED', 2)
    await taskStore.create(bare, A)
    t.strictSame(await taskStore.get('bare', A), bare, 'no history, artifacts or metadata appear')
    t.equal(await taskStore.get('missing', A), undefined)
  })

  t.test('update: status replaces, history appends in order', async t => {
    const { taskStore } = await fresh(t)
    const first = message('hello', 'ROLE_USER', 't')
    await taskStore.create({ ...newTask('t', 'TASK_STATE_SUBMITTED', 1), history: [first] }, A)
    const reply = message('working on it', 'ROLE_AGENT', 't')
    await taskStore.update('t', { kind: 'history', message: reply }, A)
    const working = { state: 'TASK_STATE_WORKING' as const, timestamp: at(2), message: reply }
    await taskStore.update('t', { kind: 'status', status: working }, A)
    const more = message('more', 'ROLE_USER', 't')
    await taskStore.update('t', { kind: 'history', message: more }, A)
    await taskStore.update('t', { kind: 'status', status: status('TASK_STATE_COMPLETED', 3) }, A)
    const task = await taskStore.get('t', A)
    t.same(task?.status, status('TASK_STATE_COMPLETED', 3))
    t.same(task?.history, [first, reply, more])
  })

  t.test('versions: 1 at creation, one more per change of any kind; getVersioned reads the task with its version', async t => {
    const { taskStore } = await fresh(t)
    const created = await taskStore.create({ ...newTask('v', 'TASK_STATE_SUBMITTED', 1), history: [message('hi', 'ROLE_USER', 'v')], artifacts: [{ artifactId: 'a', parts: [{ text: '0' }] }] }, A)
    t.equal(created, 1, 'a new task is at version 1, whatever it holds')
    const changes: TaskChange[] = [
      { kind: 'history', message: message('reply', 'ROLE_AGENT', 'v') },
      { kind: 'status', status: status('TASK_STATE_WORKING', 2) },
      { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: '1' }] }, append: true },
      { kind: 'artifact', artifact: { artifactId: 'b', parts: [{ text: 'made by an append' }] }, append: true },
      { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: 'replaced' }] }, append: false }
    ]
    const versions: unknown[] = []
    for (const change of changes) versions.push(await taskStore.update('v', change, A))
    t.same(versions, [2, 3, 4, 5, 6])
    t.type(taskStore.getVersioned, 'function')
    t.same(await taskStore.getVersioned?.('v', A), { task: await taskStore.get('v', A), version: 6 }, 'the task as get reads it, with its version')
    t.equal(await taskStore.update('ghost', changes[0] as TaskChange, A), undefined, 'a missing task has no version')
    t.equal(await taskStore.getVersioned?.('ghost', A), undefined)
    t.equal(await taskStore.create(newTask('v', 'TASK_STATE_WORKING', 3), B), 1, 'the same id in another tenant counts on its own')
    t.equal((await taskStore.getVersioned?.('v', B))?.version, 1)
    t.equal((await taskStore.getVersioned?.('v', A))?.version, 6)
  })

  t.test('update of a missing task changes nothing and creates nothing', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.update('ghost', { kind: 'status', status: status('TASK_STATE_WORKING', 1) }, A)
    await taskStore.update('ghost', { kind: 'history', message: message('x') }, A)
    await taskStore.update('ghost', { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: 'x' }] }, append: true }, A)
    t.equal(await taskStore.get('ghost', A), undefined)
    t.equal((await taskStore.list({ pageSize: 10 }, A)).totalSize, 0)
  })

  t.test('a terminal task never changes again: every change is refused with TaskTerminalError and nothing is written', async t => {
    const { taskStore } = await fresh(t)
    const states = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'] as const
    for (const state of states) {
      const id = `ended-${state}`
      await taskStore.create({ ...newTask(id, 'TASK_STATE_WORKING', 1), artifacts: [{ artifactId: 'a', parts: [{ text: '0' }] }] }, A)
      t.equal(await taskStore.update(id, { kind: 'status', status: status(state, 2) }, A), 2, `${state}: the change into it is written`)
      const before = await taskStore.getVersioned?.(id, A)
      const late: TaskChange[] = [
        { kind: 'status', status: status('TASK_STATE_WORKING', 3) },
        { kind: 'status', status: status('TASK_STATE_COMPLETED', 3) },
        { kind: 'history', message: message('late', 'ROLE_AGENT', id) },
        { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: 'late' }] }, append: true },
        { kind: 'artifact', artifact: { artifactId: 'new', parts: [{ text: 'late' }] }, append: true },
        { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: 'late' }] }, append: false }
      ]
      for (const change of late) {
        const refusal = await taskStore.update(id, change, A).then(() => undefined, (error: unknown) => error)
        t.ok(refusal instanceof TaskTerminalError, `${state}: the ${change.kind} change is refused`)
        t.match(refusal, { taskId: id, state, metadata: { taskId: id, state }, row: { jsonRpcCode: -32004 } }, 'naming the task and its state')
      }
      t.same(await taskStore.getVersioned?.(id, A), before, `${state}: nothing was written, not even a version`)
    }
    await taskStore.create(newTask(`ended-${states[0]}`, 'TASK_STATE_WORKING', 1), B)
    t.equal(await taskStore.update(`ended-${states[0]}`, { kind: 'status', status: status('TASK_STATE_COMPLETED', 2) }, B), 2,
      'the same id in another tenant is a task of its own')
  })

  t.test('a terminal state written among concurrent changes is the last change: none lands after it', async t => {
    const stores = await fresh(t)
    const second = factory.reopen === undefined ? stores : await factory.reopen()
    if (second !== stores) t.teardown(() => second.close())
    await stores.taskStore.create(newTask('racing', 'TASK_STATE_WORKING', 1), A)
    const count = 30
    const outcome = (promise: Promise<number | void>) => promise.then(version => ({ version }), (error: unknown) => ({ error }))
    const changes = Array.from({ length: count }, (_, i) => {
      const { taskStore } = i % 2 === 0 ? stores : second
      return [
        outcome(taskStore.update('racing', { kind: 'history', message: message(`m${i}`, 'ROLE_AGENT', 'racing') }, A)),
        outcome(taskStore.update('racing', { kind: 'artifact', artifact: { artifactId: 'shared', parts: [{ text: `p${i}` }] }, append: true }, A)),
        outcome(taskStore.update('racing', { kind: 'artifact', artifact: { artifactId: `own-${i}`, parts: [{ text: 'x' }] }, append: true }, A))
      ]
    })
    const ending = outcome(second.taskStore.update('racing', { kind: 'status', status: status('TASK_STATE_CANCELED', 2) }, A))
    const outcomes = await Promise.all(changes.flat())
    const ended = await ending
    t.type((ended as { version: number }).version, 'number', 'the terminal state is written')
    const endVersion = (ended as { version: number }).version
    const written = outcomes.filter((o): o is { version: number } => 'version' in o)
    t.ok(written.every(o => o.version < endVersion), 'every change written came before the terminal state')
    t.ok(outcomes.every(o => 'version' in o || o.error instanceof TaskTerminalError), 'every other change was refused as terminal')
    t.equal((await stores.taskStore.getVersioned?.('racing', A))?.version, endVersion, 'the terminal state is the last version')
    const task = await stores.taskStore.get('racing', A) as Task
    t.equal(task.status.state, 'TASK_STATE_CANCELED')
    const parts = (task.artifacts ?? []).reduce((n, artifact) => n + artifact.parts.length, 0)
    t.equal((task.history?.length ?? 0) + parts, written.length, 'the task holds exactly the changes written')
  })

  t.test('artifacts: append adds parts in order and merges metadata; replace swaps in place; new ones go last', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.create(newTask('t', 'TASK_STATE_WORKING', 1), A)
    const write = (artifact: Artifact, append: boolean) => taskStore.update('t', { kind: 'artifact', artifact, append }, A)
    const first: Artifact = { artifactId: 'stream', name: 'the stream', parts: [{ text: 'chunk 1' }], metadata: { a: 1, b: 1 } }
    await write(first, false)
    await write({ artifactId: 'other', parts: [{ text: 'other 1' }] }, false)
    await write({ artifactId: 'stream', name: 'ignored on append', parts: [{ text: 'chunk 2' }, { text: 'chunk 3' }], metadata: { b: 2 } }, true)
    t.same(first, { artifactId: 'stream', name: 'the stream', parts: [{ text: 'chunk 1' }], metadata: { a: 1, b: 1 } }, 'the artifact written first is not changed by the append')
    await write({ artifactId: 'stream', parts: [{ text: 'chunk 4' }] }, true)
    await write({ artifactId: 'fresh', parts: [{ text: 'made by an append' }] }, true)
    // A `__proto__` key, as JSON.parse makes one, merges as a key: the prototype stays Object's.
    await write({ artifactId: 'other', parts: [], metadata: JSON.parse('{"__proto__":{"isAdmin":true},"note":"n"}') }, true)
    const other = (await taskStore.get('t', A))?.artifacts?.[1]
    t.equal(JSON.stringify(other?.metadata), '{"__proto__":{"isAdmin":true},"note":"n"}', 'metadata with a __proto__ key')
    t.equal(Object.getPrototypeOf(other?.metadata), Object.prototype, 'whose prototype is untouched')
    t.equal((other?.metadata as Record<string, unknown>).isAdmin, undefined)
    await write({ artifactId: 'other', parts: [{ text: 'other 1' }] }, false)
    t.same((await taskStore.get('t', A))?.artifacts, [
      { artifactId: 'stream', name: 'the stream', parts: [{ text: 'chunk 1' }, { text: 'chunk 2' }, { text: 'chunk 3' }, { text: 'chunk 4' }], metadata: { a: 1, b: 2 } },
      { artifactId: 'other', parts: [{ text: 'other 1' }] },
      { artifactId: 'fresh', parts: [{ text: 'made by an append' }] }
    ])
    await write({ artifactId: 'stream', description: 'replaced', parts: [{ text: 'new' }] }, false)
    await write({ artifactId: 'stream', parts: [{ text: 'new 2' }] }, true)
    t.same((await taskStore.get('t', A))?.artifacts, [
      { artifactId: 'stream', description: 'replaced', parts: [{ text: 'new' }, { text: 'new 2' }] },
      { artifactId: 'other', parts: [{ text: 'other 1' }] },
      { artifactId: 'fresh', parts: [{ text: 'made by an append' }] }
    ], 'the replaced artifact keeps its place and loses its old parts, name and metadata')
  })

  t.test('appends whose chunks each add a metadata key: every key kept, the values of later chunks winning', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.create(newTask('keys', 'TASK_STATE_WORKING', 1), A)
    const chunks = 300
    for (let i = 0; i < chunks; i++) {
      await taskStore.update('keys', { kind: 'artifact', artifact: { artifactId: 'a', parts: [{ text: `${i}` }], metadata: { [`k${i}`]: i, last: i } }, append: i > 0 }, A)
    }
    const [artifact] = (await taskStore.get('keys', A))?.artifacts ?? []
    t.same(Object.keys(artifact?.metadata ?? {}).sort(), ['last', ...Array.from({ length: chunks }, (_, i) => `k${i}`)].sort())
    t.equal(artifact?.metadata?.last, chunks - 1)
    t.equal(artifact?.parts.length, chunks)
  })

  t.test('many artifacts: each found by its id, old or new; replace and append keep the order they were made in', async t => {
    const { taskStore } = await fresh(t)
    const made = (): Artifact[] => Array.from({ length: 40 }, (_, i) => ({ artifactId: `a${i}`, parts: [{ text: `a${i}.0` }] }))
    await taskStore.create({ ...newTask('many', 'TASK_STATE_WORKING', 1), artifacts: made().slice(0, 20) }, A)
    const write = (artifact: Artifact, append: boolean) => taskStore.update('many', { kind: 'artifact', artifact, append }, A)
    // The others new through updates, by an append or a replace of an id the task lacks.
    for (const [i, artifact] of made().slice(20).entries()) await write(artifact, i % 2 === 0)
    await write({ artifactId: 'a0', parts: [{ text: 'a0.1' }] }, true)
    await write({ artifactId: 'a25', parts: [{ text: 'a25.1' }] }, true)
    await write({ artifactId: 'a3', parts: [{ text: 'a3 replaced' }] }, false)
    await write({ artifactId: 'a30', name: 'replaced', parts: [{ text: 'a30 replaced' }] }, false)
    await write({ artifactId: 'late', parts: [{ text: 'late.0' }] }, true)
    await write({ artifactId: 'a39', parts: [{ text: 'a39.1' }] }, true)
    await write({ artifactId: 'late', parts: [{ text: 'late.1' }] }, true)
    await write({ artifactId: 'a3', parts: [{ text: 'a3.1' }] }, true)
    const expected = made()
    expected[0]?.parts.push({ text: 'a0.1' })
    expected[25]?.parts.push({ text: 'a25.1' })
    expected[3] = { artifactId: 'a3', parts: [{ text: 'a3 replaced' }, { text: 'a3.1' }] }
    expected[30] = { artifactId: 'a30', name: 'replaced', parts: [{ text: 'a30 replaced' }] }
    expected[39]?.parts.push({ text: 'a39.1' })
    expected.push({ artifactId: 'late', parts: [{ text: 'late.0' }, { text: 'late.1' }] })
    t.same((await taskStore.get('many', A))?.artifacts, expected)
  })

  t.test('a long stream of appended chunks is assembled in order', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.create(newTask('t', 'TASK_STATE_WORKING', 1), A)
    for (let i = 1; i <= 200; i++) {
      await taskStore.update('t', { kind: 'artifact', artifact: { artifactId: 's', parts: [{ text: `chunk ${i}` }] }, append: i > 1 }, A)
    }
    const parts = (await taskStore.get('t', A))?.artifacts?.[0]?.parts.map(part => part.text)
    t.same(parts, Array.from({ length: 200 }, (_, i) => `chunk ${i + 1}`))
  })

  t.test('list: newest status first; a status update moves a task up', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.create(newTask('old', 'TASK_STATE_COMPLETED', 10), A)
    await taskStore.create(newTask('mid', 'TASK_STATE_WORKING', 20), A)
    await taskStore.create(newTask('new', 'TASK_STATE_WORKING', 30), A)
    const ids = async () => (await taskStore.list({ pageSize: 10 }, A)).tasks.map(task => task.id)
    t.same(await ids(), ['new', 'mid', 'old'])
    await taskStore.update('mid', { kind: 'status', status: status('TASK_STATE_COMPLETED', 40) }, A)
    t.same(await ids(), ['mid', 'new', 'old'])
    const page = await taskStore.list({ pageSize: 10 }, A)
    t.equal(page.totalSize, 3)
    t.equal(page.nextPageToken, '', 'one page: no next token')
    t.same(page.tasks[0], newTask('mid', 'TASK_STATE_COMPLETED', 40), 'listed tasks are whole tasks')
  })

  t.test('list with a view: the latest historyLength messages in order, no artifacts when includeArtifacts is false', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.create(newTask('v', 'TASK_STATE_WORKING', 10), A)
    const messages = Array.from({ length: 5 }, (_, i) => message(`m${i}`, 'ROLE_USER', 'v'))
    for (const one of messages) await taskStore.update('v', { kind: 'history', message: one }, A)
    const artifact: Artifact = { artifactId: 'a', parts: [{ text: 'chunk' }] }
    await taskStore.update('v', { kind: 'artifact', artifact, append: false }, A)
    const [whole] = (await taskStore.list({ pageSize: 10 }, A)).tasks
    t.same(whole?.history, messages, 'no view: every message')
    t.same(whole?.artifacts, [artifact], 'no view: the artifacts')
    for (const historyLength of [0, 2, 5, 9]) {
      const [viewed] = (await taskStore.list({ pageSize: 10, historyLength, includeArtifacts: false }, A)).tasks
      const history = viewed?.history ?? []
      const latest = messages.slice(messages.length - Math.min(historyLength, messages.length))
      if (factory.readsListView === true) {
        t.same(history, latest, `historyLength ${historyLength}: exactly the latest`)
        t.equal(viewed?.artifacts, undefined, 'no artifacts read')
      } else {
        t.same(history.slice(history.length - latest.length), latest, `historyLength ${historyLength}: the latest, in order, among what is returned`)
      }
      t.equal(viewed?.status.state, 'TASK_STATE_WORKING')
    }
    const [withArtifacts] = (await taskStore.list({ pageSize: 10, historyLength: 1, includeArtifacts: true }, A)).tasks
    t.same(withArtifacts?.artifacts, [artifact], 'includeArtifacts: the artifacts')
    for (const historyLength of [0, 2, 9]) {
      const got = await taskStore.get('v', A, { historyLength })
      const history = got?.history ?? []
      const latest = messages.slice(messages.length - Math.min(historyLength, messages.length))
      if (factory.readsListView === true) t.same(history, latest, `get, historyLength ${historyLength}: exactly the latest`)
      else t.same(history.slice(history.length - latest.length), latest, `get, historyLength ${historyLength}: the latest among what is returned`)
      t.same(got?.artifacts, [artifact], 'get: the artifacts, always')
    }
    t.equal(await taskStore.get('missing', A, { historyLength: 1 }), undefined, 'get with a view: an unknown id is undefined')
  })

  t.test('list filters: contextId, status, statusTimestampAfter (inclusive), combined', async t => {
    const { taskStore } = await fresh(t)
    await taskStore.create(newTask('a', 'TASK_STATE_COMPLETED', 10, 'c1'), A)
    await taskStore.create(newTask('b', 'TASK_STATE_WORKING', 20, 'c1'), A)
    await taskStore.create(newTask('c', 'TASK_STATE_COMPLETED', 30, 'c2'), A)
    await taskStore.create(newTask('d', 'TASK_STATE_INPUT_REQUIRED', 40, 'c2'), A)
    const ids = async (query: Record<string, unknown>) => {
      const page = await taskStore.list({ pageSize: 10, ...query }, A)
      return { ids: page.tasks.map(task => task.id), totalSize: page.totalSize }
    }
    t.same(await ids({ contextId: 'c1' }), { ids: ['b', 'a'], totalSize: 2 })
    t.same(await ids({ contextId: 'nope' }), { ids: [], totalSize: 0 })
    t.same(await ids({ status: 'TASK_STATE_COMPLETED' }), { ids: ['c', 'a'], totalSize: 2 })
    t.same(await ids({ statusTimestampAfter: T0 + 20 }), { ids: ['d', 'c', 'b'], totalSize: 3 }, 'the boundary is included')
    t.same(await ids({ statusTimestampAfter: T0 + 21 }), { ids: ['d', 'c'], totalSize: 2 })
    t.same(await ids({ contextId: 'c2', status: 'TASK_STATE_COMPLETED', statusTimestampAfter: T0 + 30 }), { ids: ['c'], totalSize: 1 })
  })

  t.test('list paging: cursor tokens, totalSize on every page, "" on the last, ties split cleanly', async t => {
    const { taskStore } = await fresh(t)
    // Seven tasks, three of them sharing one timestamp: the order is still total.
    const stamps = [10, 20, 30, 30, 30, 40, 50]
    for (const [i, ms] of stamps.entries()) await taskStore.create(newTask(`t${i}`, 'TASK_STATE_WORKING', ms), A)
    const all = (await taskStore.list({ pageSize: 100 }, A)).tasks.map(task => task.id)
    t.same(all.slice(0, 2), ['t6', 't5'])
    t.same(all.slice(5), ['t1', 't0'])
    t.same(all.slice(2, 5).sort(), ['t2', 't3', 't4'])

    const seen: string[] = []
    let token: string | undefined
    let pages = 0
    do {
      const page = await taskStore.list({ pageSize: 3, pageToken: token }, A)
      t.equal(page.totalSize, 7, `page ${pages + 1} totalSize`)
      seen.push(...page.tasks.map(task => task.id))
      token = page.nextPageToken
      pages++
    } while (token !== '' && pages < 10)
    t.equal(pages, 3)
    t.same(seen, all, 'pages concatenate to the full order, no task twice or missing')

    const filtered = await taskStore.list({ pageSize: 2, status: 'TASK_STATE_WORKING', statusTimestampAfter: T0 + 30 }, A)
    t.equal(filtered.totalSize, 5)
    const rest = await taskStore.list({ pageSize: 10, status: 'TASK_STATE_WORKING', statusTimestampAfter: T0 + 30, pageToken: filtered.nextPageToken }, A)
    t.same([...filtered.tasks, ...rest.tasks].map(task => task.id), all.slice(0, 5))
    t.equal(rest.nextPageToken, '')

    await rejectsInvalidParams(t, taskStore.list({ pageSize: 3, pageToken: 'not-a-token' }, A), 'a token this store never issued')
    for (const time of [0.5, 1e21]) {
      const forged = Buffer.from(JSON.stringify([time, 'x'])).toString('base64url')
      await rejectsInvalidParams(t, taskStore.list({ pageSize: 3, pageToken: forged }, A), `a forged cursor time ${time}`)
    }
    // An id no key may be (PostgreSQL refuses a NUL in text: a 500 before), or longer than a key.
    for (const [id, what] of [['x\u0000y', 'a NUL'], ['x'.repeat(257), '257 characters'], ['\ud800', 'a lone surrogate']]) {
      const forged = Buffer.from(JSON.stringify([T0, id])).toString('base64url')
      await rejectsInvalidParams(t, taskStore.list({ pageSize: 3, pageToken: forged }, A), `a forged cursor id with ${what}`)
    }
  })

  t.test('list of an empty tenant: no tasks, totalSize 0, no token', async t => {
    const { taskStore } = await fresh(t)
    t.same(await taskStore.list({ pageSize: 5 }, A), { tasks: [], totalSize: 0, nextPageToken: '' })
  })

  t.test('TTL: a terminal task disappears once the TTL has passed; a running one stays', async t => {
    let now = T0
    const { taskStore } = await fresh(t, { ttl: 1000, now: () => now })
    await taskStore.create(newTask('done', 'TASK_STATE_WORKING', 0), A)
    await taskStore.create(newTask('running', 'TASK_STATE_WORKING', 0), A)
    await taskStore.update('done', { kind: 'status', status: status('TASK_STATE_COMPLETED', 0) }, A)
    now += 999
    t.ok(await taskStore.get('done', A), 'kept until the TTL ends')
    t.equal((await taskStore.list({ pageSize: 10 }, A)).totalSize, 2)
    now += 1
    t.equal(await taskStore.get('done', A), undefined, 'gone at the TTL')
    t.equal(await taskStore.getVersioned?.('done', A), undefined, 'for getVersioned too')
    const page = await taskStore.list({ pageSize: 10 }, A)
    t.same(page.tasks.map(task => task.id), ['running'])
    t.equal(page.totalSize, 1)
    now += 1_000_000
    await taskStore.create(newTask('later', 'TASK_STATE_SUBMITTED', 0), A)
    t.ok(await taskStore.get('running', A), 'a task that is not terminal never expires')
    t.equal(await taskStore.get('done', A), undefined, 'still gone after the sweep')
  })

  t.test('tenant isolation: the same id in two tenants are two tasks; neither sees the other', async t => {
    const { taskStore, pushConfigStore } = await fresh(t)
    t.equal(taskStore.isolatesTenants, true, 'the task store declares tenant isolation')
    t.equal(pushConfigStore.isolatesTenants, true, 'the push-config store declares tenant isolation')
    await taskStore.create({ ...newTask('same', 'TASK_STATE_WORKING', 1, 'ctx-a'), history: [message('from a', 'ROLE_USER', 'same')] }, A)
    await taskStore.create(newTask('only-a', 'TASK_STATE_WORKING', 2, 'ctx-a'), A)
    await taskStore.create(newTask('same', 'TASK_STATE_SUBMITTED', 3, 'ctx-b'), B)
    await taskStore.update('same', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: 'b' }] }, append: true }, B)
    await taskStore.update('same', { kind: 'status', status: status('TASK_STATE_COMPLETED', 4) }, B)
    await taskStore.update('only-a', { kind: 'status', status: status('TASK_STATE_FAILED', 5) }, B)

    const a = await taskStore.get('same', A)
    t.equal(a?.status.state, 'TASK_STATE_WORKING')
    t.equal(a?.contextId, 'ctx-a')
    t.equal(a?.artifacts, undefined, "B's artifact is not on A's task")
    t.equal(a?.history?.length, 1)
    const b = await taskStore.get('same', B)
    t.equal(b?.status.state, 'TASK_STATE_COMPLETED')
    t.equal(b?.history, undefined, "A's history is not on B's task")
    t.equal(await taskStore.get('only-a', B), undefined)
    t.equal((await taskStore.get('only-a', A))?.status.state, 'TASK_STATE_WORKING', "B's update did not reach A's task")
    t.same((await taskStore.list({ pageSize: 10 }, A)).tasks.map(task => task.id), ['only-a', 'same'])
    const listB = await taskStore.list({ pageSize: 10 }, B)
    t.same(listB.tasks.map(task => task.id), ['same'])
    t.equal(listB.totalSize, 1)
    t.equal((await taskStore.list({ pageSize: 10, contextId: 'ctx-a' }, B)).totalSize, 0)

    await pushConfigStore.set({ id: 'p', taskId: 'same', url: 'https://a.example/hook' }, A)
    t.equal(await pushConfigStore.get('same', 'p', B), undefined)
    t.same((await pushConfigStore.list('same', { pageSize: 10 }, B)).configs, [])
    await pushConfigStore.delete('same', 'p', B)
    t.ok(await pushConfigStore.get('same', 'p', A), "B's delete did not remove A's config")
  })

  t.test('push configs: set, get, replace in place, list in id order with paging, delete idempotent', async t => {
    const { taskStore, pushConfigStore } = await fresh(t)
    await taskStore.create(newTask('t', 'TASK_STATE_WORKING', 1), A)
    await taskStore.create(newTask('u', 'TASK_STATE_WORKING', 1), A)
    const configs = [
      { id: 'c1', taskId: 't', url: 'https://hooks.example/1', token: 'secret-1' },
      { id: 'c2', taskId: 't', url: 'https://hooks.example/2', authentication: { scheme: 'Bearer', credentials: 'abc' } },
      { id: 'c3', taskId: 't', url: 'https://hooks.example/3' },
      { id: 'c4', taskId: 't', url: 'https://hooks.example/4' },
      { id: 'c5', taskId: 't', url: 'https://hooks.example/5' }
    ]
    for (const config of configs) await pushConfigStore.set(config, A)
    await pushConfigStore.set({ id: 'c1', taskId: 'u', url: 'https://hooks.example/u' }, A)
    t.same(await pushConfigStore.get('t', 'c2', A), configs[1])
    t.equal(await pushConfigStore.get('t', 'nope', A), undefined)
    t.equal(await pushConfigStore.get('nope', 'c1', A), undefined)

    const replaced = { id: 'c2', taskId: 't', url: 'https://hooks.example/2-new' }
    await pushConfigStore.set(replaced, A)
    t.strictSame(await pushConfigStore.get('t', 'c2', A), replaced, 'replaced whole: the old authentication is gone')

    const first = await pushConfigStore.list('t', { pageSize: 2 }, A)
    t.same(first.configs, [configs[0], replaced], 'id order; a replaced config keeps its place')
    t.not(first.nextPageToken, '')
    const second = await pushConfigStore.list('t', { pageSize: 2, pageToken: first.nextPageToken }, A)
    t.same(second.configs, [configs[2], configs[3]])
    const third = await pushConfigStore.list('t', { pageSize: 2, pageToken: second.nextPageToken }, A)
    t.same(third, { configs: [configs[4]], nextPageToken: '' })
    const exact = await pushConfigStore.list('t', { pageSize: 5 }, A)
    t.same(exact.nextPageToken, '', 'a page that ends exactly at the last config has no token')
    t.same((await pushConfigStore.list('u', { pageSize: 10 }, A)).configs, [{ id: 'c1', taskId: 'u', url: 'https://hooks.example/u' }])

    await pushConfigStore.delete('t', 'c3', A)
    await pushConfigStore.delete('t', 'c3', A)
    await pushConfigStore.delete('t', 'never', A)
    t.equal(await pushConfigStore.get('t', 'c3', A), undefined)
    t.same((await pushConfigStore.list('t', { pageSize: 10 }, A)).configs.map(c => c.id), ['c1', 'c2', 'c4', 'c5'])
    t.ok(await pushConfigStore.get('u', 'c1', A), "deleting t's configs left u's alone")
    t.same(await pushConfigStore.list('none', { pageSize: 10 }, A), { configs: [], nextPageToken: '' })
    await rejectsInvalidParams(t, pushConfigStore.list('t', { pageSize: 2, pageToken: '%%%' }, A), 'a bad push-config page token')
    // Well-formed but never issued (a push-config token is [0, the last id listed]): no number
    // but 0, and no id a store could not hold, reaches a store.
    for (const forged of [[-1, ''], [0.5, 'c1'], [1e21, 'c1'], [1, 'c1'], [0, 'c\u0000'], [0, '\ud800']]) {
      const token = Buffer.from(JSON.stringify(forged)).toString('base64url')
      await rejectsInvalidParams(t, pushConfigStore.list('t', { pageSize: 2, pageToken: token }, A), `a forged push-config token ${JSON.stringify(forged)}`)
    }
  })

  t.test('concurrent updates of one task: no update is lost, each has a version of its own', async t => {
    const stores = await fresh(t)
    const writers = [stores]
    if (factory.reopen !== undefined) {
      const second = await factory.reopen()
      t.teardown(() => second.close())
      writers.push(second)
    }
    await stores.taskStore.create(newTask('busy', 'TASK_STATE_WORKING', 1), A)
    const count = 60
    const messages = Array.from({ length: count }, (_, i) => message(`m${i}`, 'ROLE_AGENT', 'busy'))
    const versions = (await Promise.all(Array.from({ length: count }, async (_, i) => {
      const { taskStore } = writers[i % writers.length] as OpenedStores
      return await Promise.all([
        taskStore.update('busy', { kind: 'history', message: messages[i] as Message }, A),
        taskStore.update('busy', { kind: 'artifact', artifact: { artifactId: 'shared', parts: [{ text: `p${i}` }] }, append: true }, A),
        taskStore.update('busy', { kind: 'artifact', artifact: { artifactId: `own-${i}`, parts: [{ text: 'x' }] }, append: false }, A),
        taskStore.update('busy', { kind: 'status', status: status('TASK_STATE_WORKING', 100 + i) }, A)
      ])
    }))).flat() as number[]
    t.same(versions.sort((x, y) => x - y), Array.from({ length: count * 4 }, (_, i) => i + 2), 'versions 2 to 241: none shared, none skipped')
    t.equal((await stores.taskStore.getVersioned?.('busy', A))?.version, count * 4 + 1)
    const task = await stores.taskStore.get('busy', A) as Task
    t.same(task.history?.map(m => m.messageId).sort(), messages.map(m => m.messageId).sort(), 'every message is there once')
    const shared = task.artifacts?.find(a => a.artifactId === 'shared')
    t.same(shared?.parts.map(p => p.text).sort(), Array.from({ length: count }, (_, i) => `p${i}`).sort(), 'every appended chunk is there once')
    t.equal(task.artifacts?.length, count + 1, 'every artifact is there once')
    t.equal(task.status.state, 'TASK_STATE_WORKING')
  })

  t.test('concurrent replace and appends: the replace drops everything before it, keeps everything after', async t => {
    const stores = await fresh(t)
    const second = factory.reopen === undefined ? stores : await factory.reopen()
    if (second !== stores) t.teardown(() => second.close())
    await stores.taskStore.create(newTask('r', 'TASK_STATE_WORKING', 1), A)
    await stores.taskStore.update('r', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: 'before' }] }, append: false }, A)
    const appends = Array.from({ length: 40 }, (_, i) => `a${i}`)
    await Promise.all([
      ...appends.map((text, i) => (i % 2 === 0 ? stores : second).taskStore
        .update('r', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text }] }, append: true }, A)),
      second.taskStore.update('r', { kind: 'artifact', artifact: { artifactId: 'x', parts: [{ text: 'R1' }, { text: 'R2' }] }, append: false }, A)
    ])
    const parts = (await stores.taskStore.get('r', A))?.artifacts?.[0]?.parts.map(p => p.text as string) ?? []
    t.same(parts.slice(0, 2), ['R1', 'R2'], 'the replacement starts the artifact')
    const rest = parts.slice(2)
    t.equal(new Set(rest).size, rest.length, 'no chunk twice')
    t.ok(rest.every(text => appends.includes(text)), 'only appended chunks follow')
    t.notOk(parts.includes('before'))
  })

  if (factory.reopen !== undefined) {
    const reopen = factory.reopen
    t.test('durable: a second connection sees every write of the first', async t => {
      const stores = await fresh(t)
      await stores.taskStore.create({ ...newTask('kept', 'TASK_STATE_WORKING', 1), history: [message('hi', 'ROLE_USER', 'kept')] }, A)
      await stores.taskStore.update('kept', { kind: 'artifact', artifact: { artifactId: 's', parts: [{ text: '1' }] }, append: false }, A)
      await stores.taskStore.update('kept', { kind: 'artifact', artifact: { artifactId: 's', parts: [{ text: '2' }] }, append: true }, A)
      await stores.pushConfigStore.set({ id: 'p', taskId: 'kept', url: 'https://hooks.example/p', token: 'tok' }, A)
      const expected = await stores.taskStore.get('kept', A)
      const other = await reopen()
      t.teardown(() => other.close())
      t.same(await other.taskStore.get('kept', A), expected)
      t.same(await other.pushConfigStore.get('kept', 'p', A), { id: 'p', taskId: 'kept', url: 'https://hooks.example/p', token: 'tok' })
    })

    t.test('listUnfinished: SUBMITTED and WORKING tasks of every tenant, nothing else', async t => {
      const { taskStore } = await fresh(t)
      await taskStore.create(newTask('submitted', 'TASK_STATE_SUBMITTED', 1, 'c1'), A)
      await taskStore.create(newTask('working', 'TASK_STATE_WORKING', 2, 'c2'), B)
      await taskStore.create(newTask('input', 'TASK_STATE_INPUT_REQUIRED', 3), A)
      await taskStore.create(newTask('auth', 'TASK_STATE_AUTH_REQUIRED', 3), A)
      await taskStore.create(newTask('done', 'TASK_STATE_WORKING', 4), A)
      await taskStore.update('done', { kind: 'status', status: status('TASK_STATE_COMPLETED', 5) }, A)
      t.ok(taskStore.listUnfinished, 'a durable store can list unfinished tasks')
      const found = await taskStore.listUnfinished?.() ?? []
      t.same(found.sort((x, y) => x.taskId < y.taskId ? -1 : 1), [
        { taskId: 'submitted', contextId: 'c1', scope: A },
        { taskId: 'working', contextId: 'c2', scope: B }
      ])
    })
  }
}
