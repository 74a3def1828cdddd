// The handler over a bus that does not follow a task in time, or loses events: a stream
// waits for the bus outside the task's changes, so the task goes on meanwhile, and is refused
// Unavailable past `busReadyTimeout` (or at shutdown); once the bus resubscribes after a loss, a
// stream of the task reads it again and gets what it missed, the task as stored.
import t from 'tap'
import { MemoryEventBus, MemoryTaskStore, type AgentExecutor, type StreamResponse } from '../lib/index.js'
import { eventually, openSse, post, result, startServer, userMessage } from './helpers/server.js'

/** Gates the executor waits at, by name; `open(name)` lets it through once it is there. */
function gates () {
  const waiting = new Map<string, () => void>()
  return {
    at: (name: string) => new Promise<void>(resolve => waiting.set(name, resolve)),
    waits: (name: string) => waiting.has(name),
    async open (name: string) {
      await eventually(() => waiting.has(name))
      const pass = waiting.get(name) as () => void
      waiting.delete(name)
      pass()
    }
  }
}

/** `steps`: WORKING, gate `one`, artifact chunk `one`, gate `two`, chunk `two`, COMPLETED. */
function stepper (gate: ReturnType<typeof gates>): AgentExecutor {
  return {
    async execute (_context, events) {
      await events.working()
      await gate.at('one')
      await events.artifact({ artifactId: 'out', parts: [{ text: 'one' }] })
      await gate.at('two')
      await events.artifact({ artifactId: 'out', parts: [{ text: 'two' }] }, { append: true, lastChunk: true })
      await events.completed()
    }
  }
}

/** The in-memory bus, whose `ready()` resolves only once `follow()` is called. */
class SlowBus extends MemoryEventBus {
  follow!: () => void
  readonly #following = new Promise<void>(resolve => { this.follow = resolve })
  async ready (): Promise<void> { await this.#following }
}

/** The in-memory bus, losing every event while `down`; `resubscribe()` brings it back and tells its listeners. */
class LossyBus extends MemoryEventBus {
  down = false
  readonly #resubscribed = new Set<() => void>()
  override publish (topic: string, event: StreamResponse, version?: number): void {
    if (!this.down) super.publish(topic, event, version)
  }

  onResubscribe (listener: () => void): () => void {
    this.#resubscribed.add(listener)
    return () => this.#resubscribed.delete(listener)
  }

  get resubscribeListeners (): number {
    return this.#resubscribed.size
  }

  resubscribe (): void {
    this.down = false
    for (const listener of this.#resubscribed) listener()
  }
}

/** Resolves with `promise`'s value, or with 'late' after `ms`. */
function within<T> (promise: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([promise, new Promise<'late'>(resolve => { timer = setTimeout(resolve, ms, 'late') })]).finally(() => clearTimeout(timer))
}

/** What each event of a stream is: `task:<state>[:<artifact texts>]`, `artifact:<text>`, `status:<state>`, `error:<code>`. */
function shapes (events: Array<{ event?: string, data: any }>): string[] {
  return events.map(({ data }) => {
    if (data.error !== undefined) return `error:${data.error.code as number}`
    const { task, artifactUpdate, statusUpdate } = data.result
    if (task !== undefined) return [`task:${task.status.state as string}`, ...(task.artifacts ?? []).flatMap((a: any) => a.parts.map((p: any) => p.text))].join(':')
    if (artifactUpdate !== undefined) return `artifact:${artifactUpdate.artifact.parts[0].text as string}`
    return `status:${statusUpdate.status.state as string}`
  })
}

const quickShutdown = { completionGrace: 50, taskGrace: 50 }

/** Closes the server, giving up after a while (a stream the test left waiting may hold it). */
async function closeSoon (server: Awaited<ReturnType<typeof startServer>>): Promise<void> {
  const closing = server.close().catch(() => {})
  if (await within(closing, 2000) === 'late') server.fastify.server.closeAllConnections()
}

t.test('SubscribeToTask while the bus does not follow the task: the task goes on; the call is refused Unavailable after busReadyTimeout', async t => {
  const gate = gates()
  const bus = new SlowBus()
  const server = await startServer({ executor: stepper(gate), bus, busReadyTimeout: 300, shutdown: quickShutdown })
  t.teardown(() => closeSoon(server))
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
  const started = Date.now()
  const subscribing = post(server.endpoint, { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } })
  await eventually(() => bus.listenerCount() === 1)
  await gate.open('one')
  await gate.open('two')
  await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_COMPLETED', 1000)
  t.pass('the task completed while the subscription waited for the bus')
  const answer = await within(subscribing, 3000)
  t.not(answer, 'late', 'answered')
  t.same(answer === 'late' ? undefined : answer.body, {
    jsonrpc: '2.0',
    id: 'sub',
    error: {
      code: -32603,
      message: `Service unavailable: the event bus did not follow task ${task.id as string} within 300 ms`,
      data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
    }
  })
  t.ok(Date.now() - started >= 300, 'after busReadyTimeout')
  t.equal(bus.listenerCount(), 0, 'its subscription released')
})

for (const versions of [true, false]) {
  t.test(`a bus that follows the task late (${versions ? 'a store with versions' : 'a store without'}): the stream gets the snapshot, then each later event once; the task went on meanwhile`, async t => {
    const gate = gates()
    const bus = new SlowBus()
    const taskStore = new MemoryTaskStore()
    if (!versions) Object.defineProperty(taskStore, 'getVersioned', { value: undefined })
    const server = await startServer({ executor: stepper(gate), bus, taskStore, shutdown: quickShutdown })
    t.teardown(() => closeSoon(server))
    const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
    const subscribing = openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
    await eventually(() => bus.listenerCount() === 1)
    // Published on the bus while the subscription waits (and holds it): the snapshot has it.
    await gate.open('one')
    await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).artifacts?.length === 1, 1000)
    t.pass('the chunk was stored while the subscription waited for the bus')
    bus.follow()
    const stream = await subscribing
    await gate.open('two')
    await stream.ended
    t.same(shapes(stream.events), ['task:TASK_STATE_WORKING:one', 'artifact:two', 'status:TASK_STATE_COMPLETED'])
  })
}

t.test('shutdown while a SubscribeToTask waits for the bus: answered Unavailable (shutting down) within the grace periods', async t => {
  const bus = new SlowBus()
  const server = await startServer({ bus, busReadyTimeout: 60_000, shutdown: { completionGrace: 100, taskGrace: 100 } })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('input') })
  const subscribing = post(server.endpoint, { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } })
  await eventually(() => bus.listenerCount() === 1)
  const started = Date.now()
  const closed = await within(server.close(), 3000)
  if (closed === 'late') server.fastify.server.closeAllConnections()
  t.not(closed, 'late', `close() ended in time (${Date.now() - started} ms)`)
  t.same((await subscribing).body, {
    jsonrpc: '2.0',
    id: 'sub',
    error: { code: -32603, message: 'Service unavailable: the server is shutting down', data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }] }
  })
})

t.test('the bus resubscribes after losing events: a stream of the task gets it as stored, and ends when it is terminal', async t => {
  const gate = gates()
  const bus = new LossyBus()
  const server = await startServer({ executor: stepper(gate), bus, shutdown: quickShutdown })
  t.teardown(() => closeSoon(server))
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
  const stream = await openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  bus.down = true
  await gate.open('one')
  await gate.open('two')
  await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_COMPLETED')
  bus.resubscribe()
  t.not(await within(stream.ended, 3000), 'late', 'the stream ended')
  t.same(shapes(stream.events), ['task:TASK_STATE_WORKING', 'task:TASK_STATE_COMPLETED:one:two'], 'the snapshot, then the task as stored once the bus was back')
})

t.test('the bus resubscribes and nothing was lost: the stream gets nothing more, and goes on', async t => {
  const gate = gates()
  const bus = new LossyBus()
  const server = await startServer({ executor: stepper(gate), bus, shutdown: quickShutdown })
  t.teardown(() => closeSoon(server))
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
  const stream = await openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  await gate.open('one')
  await eventually(() => stream.events.length === 2)
  bus.resubscribe()
  // The catch-up's read is done by the time the store answers a call made after it.
  await result(server.endpoint, 'GetTask', { id: task.id })
  await gate.open('two')
  await stream.ended
  t.same(shapes(stream.events), ['task:TASK_STATE_WORKING', 'artifact:one', 'artifact:two', 'status:TASK_STATE_COMPLETED'])
})

t.test('the bus resubscribes while the stream waits for it: the snapshot read after covers what was lost', async t => {
  const gate = gates()
  class SlowLossyBus extends LossyBus {
    follow!: () => void
    readonly #following = new Promise<void>(resolve => { this.follow = resolve })
    async ready (): Promise<void> { await this.#following }
  }
  const bus = new SlowLossyBus()
  const server = await startServer({ executor: stepper(gate), bus, shutdown: quickShutdown })
  t.teardown(() => closeSoon(server))
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
  const subscribing = openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  await eventually(() => bus.listenerCount() === 1)
  bus.down = true
  await gate.open('one')
  bus.resubscribe()
  bus.follow()
  const stream = await subscribing
  await gate.open('two')
  await stream.ended
  t.same(shapes(stream.events), ['task:TASK_STATE_WORKING:one', 'artifact:two', 'status:TASK_STATE_COMPLETED'], 'each event once')
})

t.test('a store without versions: a resubscription always sends the task as stored (it cannot tell what was missed)', async t => {
  const gate = gates()
  const bus = new LossyBus()
  const taskStore = new MemoryTaskStore()
  Object.defineProperty(taskStore, 'getVersioned', { value: undefined })
  const server = await startServer({ executor: stepper(gate), bus, taskStore, shutdown: quickShutdown })
  t.teardown(() => closeSoon(server))
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
  const stream = await openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  bus.resubscribe()
  await eventually(() => stream.events.length === 2)
  await gate.open('one')
  await gate.open('two')
  await stream.ended
  t.same(shapes(stream.events), ['task:TASK_STATE_WORKING', 'task:TASK_STATE_WORKING', 'artifact:one', 'artifact:two', 'status:TASK_STATE_COMPLETED'])
})

t.test('the store fails the read after a resubscription: the stream ends Unavailable, for its client to subscribe again', async t => {
  const gate = gates()
  const bus = new LossyBus()
  let failing = false
  class FailingReads extends MemoryTaskStore {
    override async getVersioned (...args: Parameters<MemoryTaskStore['getVersioned']>) {
      if (failing) throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
      return await super.getVersioned(...args)
    }
  }
  const server = await startServer({ executor: stepper(gate), bus, taskStore: new FailingReads(), shutdown: quickShutdown })
  t.teardown(async () => {
    await gate.open('one')
    await gate.open('two')
    await closeSoon(server)
  })
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('steps'), configuration: { returnImmediately: true } })
  const stream = await openSse(server.endpoint, 'POST', { jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }, 1)
  failing = true
  bus.resubscribe()
  await stream.ended
  t.same(stream.events.at(-1), {
    event: 'error',
    data: {
      jsonrpc: '2.0',
      id: 'sub',
      error: { code: -32603, message: 'Service unavailable: a service the agent needs cannot be reached', data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }] }
    }
  })
})

t.test('a closed handler no longer follows the bus\'s resubscriptions', async t => {
  const bus = new LossyBus()
  const server = await startServer({ bus })
  t.equal(bus.resubscribeListeners, 1)
  await server.close()
  t.equal(bus.resubscribeListeners, 0)
})

t.test('busReadyTimeout is checked', async t => {
  await t.rejects(startServer({ busReadyTimeout: 0 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option busReadyTimeout: must be an integer >= 1' })
  await t.rejects(startServer({ busReadyTimeout: 2 ** 31 }), { code: 'A2A_ERR_INVALID_OPTION', message: /^Invalid option busReadyTimeout: must be at most/ })
})
