// A store that cannot be reached for a while (PostgreSQL behind a proxy that goes down): calls
// get Unavailable with a RetryInfo, worth another attempt, not an internal error; once the
// database is back, the same server serves again. A connection lost during a transaction
// crashes nothing; one gone silent holds a statement queryTimeout at most, and close()
// closeTimeout at most. The final state an execution leaves its task in, when the store fails
// it, is tried again until the store is back (`finalStateRetry`), so the task is not left
// running without an executor.
import Fastify from 'fastify'
import pg from 'pg'
import t, { type Test } from 'tap'
import { a2aWebSocket, MemoryTaskStore, openPostgresStores, type A2APluginOptions, type AgentExecutor, type Task, type TaskStore } from '../lib/index.js'
import { toA2AError } from '../lib/errors/index.js'
import { conformanceCard } from '../examples/agent.js'
import { logLines } from './helpers/logs.js'
import { dropSchemas, postgresProxy, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { rest } from './helpers/rest.js'
import { call, eventually, openSse, result, startServer, userMessage } from './helpers/server.js'
import { timeoutsMadeIn } from './helpers/timers.js'

const econnreset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })

/** The memory store, whose writes fail (ECONNRESET) while `mode` is `throw`, and wait for `release()` first while it is `hang`. */
class FlakyStore extends MemoryTaskStore {
  mode: 'up' | 'throw' | 'hang' = 'up'
  writes = 0
  readonly #hung: Array<() => void> = []
  get hung (): number { return this.#hung.length }
  release (): void { for (const resume of this.#hung.splice(0)) resume() }
  async #write (): Promise<void> {
    this.writes++
    if (this.mode === 'hang') await new Promise<void>(resolve => this.#hung.push(resolve))
    if (this.mode !== 'up') throw econnreset()
  }

  override async create (...args: Parameters<MemoryTaskStore['create']>) {
    await this.#write()
    return await super.create(...args)
  }

  override async update (...args: Parameters<MemoryTaskStore['update']>) {
    await this.#write()
    return await super.update(...args)
  }
}

/** WORKING, then it waits for `finish()` and completes: a write the store fails there rejects, and the executor throws. */
function finishing (): { executor: AgentExecutor, finish: () => void } {
  let finish!: () => void
  const finished = new Promise<void>(resolve => { finish = resolve })
  return {
    finish,
    executor: {
      async execute (_context, events) {
        await events.working()
        await finished
        await events.completed()
      }
    }
  }
}

/** A server whose log lines (warn and up) the test reads. */
async function loggingServer (t: Test, options: Partial<A2APluginOptions> & { taskStore: TaskStore, executor: AgentExecutor }) {
  const { stream, lines } = logLines()
  const fastify = Fastify({ logger: { level: 'warn', stream } })
  await fastify.register(a2aWebSocket, { card: conformanceCard, shutdown: { completionGrace: 50, taskGrace: 50 }, ...options })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  const endpoint = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
  t.teardown(() => fastify.close())
  const logged = (message: string) => lines.map(line => JSON.parse(line)).filter(entry => entry.msg === message)
  return { fastify, endpoint, logged }
}

const TRYING_AGAIN = 'could not write the final state of a task: trying again'
const GIVEN_UP = 'could not write the final state of a task: given up, the task is left as stored'

t.test('the store fails the final state of a task: the call gets Unavailable, and once the store is back the task ends as it should (FAILED, the agent failed)', async t => {
  const taskStore = new FlakyStore()
  const { executor, finish } = finishing()
  const { endpoint, logged } = await loggingServer(t, { taskStore, executor })
  const stream = await openSse(endpoint, 'POST', { jsonrpc: '2.0', id: 's', method: 'SendStreamingMessage', params: { message: userMessage('x') } }, 2)
  const taskId = stream.events[0]?.data.result.task.id
  taskStore.mode = 'throw'
  finish()
  await stream.ended
  t.equal(stream.events.at(-1)?.data.error.message, 'Service unavailable: a service the agent needs cannot be reached', 'the stream ends Unavailable')
  await eventually(() => logged(TRYING_AGAIN).length === 1)
  t.match(logged(TRYING_AGAIN)[0], { taskId, state: 'TASK_STATE_FAILED', err: { code: 'ECONNRESET' } })
  t.equal((await result(endpoint, 'GetTask', { id: taskId })).status.state, 'TASK_STATE_WORKING', 'the store still says WORKING')
  taskStore.mode = 'up'
  await eventually(async () => (await result(endpoint, 'GetTask', { id: taskId })).status.state === 'TASK_STATE_FAILED')
  const task = await result(endpoint, 'GetTask', { id: taskId })
  t.same(task.status.message.parts, [{ text: 'the agent failed' }], 'FAILED as the executor\'s throw leaves it')
  const subscribe = await call(endpoint, 'SubscribeToTask', { id: taskId })
  t.equal(subscribe.error.code, -32004, 'a later SubscribeToTask is refused: the task is over')
  t.same(logged(GIVEN_UP), [])
})

t.test('finalStateRetry bounds the tries: past it the task is left as stored, with an error logged', async t => {
  for (const finalStateRetry of [0, 300]) {
    const taskStore = new FlakyStore()
    const { executor, finish } = finishing()
    const { endpoint, logged } = await loggingServer(t, { taskStore, executor, finalStateRetry })
    const { task } = await result(endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    taskStore.mode = 'throw'
    finish()
    await eventually(() => logged(GIVEN_UP).length === 1)
    t.match(logged(GIVEN_UP)[0], { taskId: task.id, state: 'TASK_STATE_FAILED', err: { code: 'ECONNRESET' } }, `finalStateRetry ${finalStateRetry}`)
    t.equal(logged(TRYING_AGAIN).length, finalStateRetry === 0 ? 0 : 1, finalStateRetry === 0 ? 'tried once' : 'tried again')
    const writes = taskStore.writes
    taskStore.mode = 'up'
    await new Promise(resolve => setTimeout(resolve, 300))
    t.equal(taskStore.writes, writes, 'no more tries')
    t.equal((await result(endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_WORKING', 'left as stored')
  }
})

t.test('finalStateRetry is checked', async t => {
  await t.rejects(startServer({ finalStateRetry: -1 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option finalStateRetry: must be an integer >= 0' })
  await t.rejects(startServer({ finalStateRetry: 1.5 }), { code: 'A2A_ERR_INVALID_OPTION', message: /^Invalid option finalStateRetry/ })
})

t.test('close() stops the tries: one waiting for its time is dropped and logged, and holds nothing', async t => {
  const taskStore = new FlakyStore()
  const { executor, finish } = finishing()
  const { fastify, endpoint, logged } = await loggingServer(t, { taskStore, executor })
  const { task } = await result(endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  taskStore.mode = 'throw'
  finish()
  await eventually(() => logged(TRYING_AGAIN).length === 1)
  await fastify.close()
  t.match(logged('could not write the final state of a task before shutdown: left as stored'), [{ taskId: task.id }])
  const writes = taskStore.writes
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(taskStore.writes, writes, 'not tried again')
})

t.test('close() while a try waits for the store: the try gives up once the store fails it', async t => {
  const taskStore = new FlakyStore()
  const { executor, finish } = finishing()
  const { fastify, endpoint, logged } = await loggingServer(t, { taskStore, executor })
  const { task } = await result(endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  taskStore.mode = 'throw'
  finish()
  await eventually(() => logged(TRYING_AGAIN).length === 1)
  taskStore.mode = 'hang'
  await eventually(() => taskStore.hung === 1)
  await fastify.close()
  taskStore.mode = 'throw'
  taskStore.release()
  await eventually(() => logged(GIVEN_UP).length === 1)
  t.match(logged(GIVEN_UP)[0], { taskId: task.id, attempts: 2 })
  const writes = taskStore.writes
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(taskStore.writes, writes, 'not tried again')
})

t.test('the codes of a service out of reach are Unavailable with a RetryInfo; any other error stays internal', async t => {
  for (const cause of [
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    Object.assign(new Error('connection failure'), { code: '08006' }),
    Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }),
    Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY_RECOVERY' }),
    new Error('timeout exceeded when trying to connect'),
    new Error('Connection terminated unexpectedly'),
    new Error('Connection terminated due to connection timeout'),
    new Error('Query read timeout'),
    // ioredis's, with Redis out of reach
    new Error('Reached the max retries per request limit (which is 20). Refer to "maxRetriesPerRequest" option for details.'),
    new Error('Connection is closed.')
  ]) {
    const error = toA2AError(cause)
    t.equal(error.row.jsonRpcCode, -32603, cause.message)
    t.equal(error.row.httpStatus, 503)
    t.same(error.details, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }])
    t.equal(error.cause, cause, 'the cause kept for the log')
  }
  for (const cause of [Object.assign(new Error('syntax error'), { code: '42601' }), new TypeError('x is undefined'), Object.assign(new Error('x'), { code: 'E08000' }),
    Object.assign(new Error('x'), { code: 'SQLITE_BUSYNESS' }), new Error('Connection is closed. Or is it?')]) {
    t.equal(toA2AError(cause).row.httpStatus, 500, `${cause.message}: internal`)
  }
})

const url = await requirePostgres(t)
if (url !== undefined) {
  /** A server on PostgreSQL stores reached through a proxy whose `mode` the test changes; a task already stored. */
  const serverBehindProxy = async (t: Test, mode: () => 'forward' | 'refuse' | 'hang', options: { connectionTimeout?: number, queryTimeout?: number, closeTimeout?: number } = {}) => {
    const proxy = await postgresProxy(url, mode)
    const schema = uniqueSchema('outage')
    const stores = await openPostgresStores({ connectionString: proxy.url, schema, ...options })
    const server = await startServer({ taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore })
    t.teardown(async () => {
      await server.close()
      await proxy.close()
      await stores.close()
      await dropSchemas(url, [schema])
    })
    const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('hello') })).task
    return { proxy, server, task, stores }
  }

  /** The answer of a call to a store out of reach. */
  const UNAVAILABLE = {
    code: -32603,
    message: 'Service unavailable: a service the agent needs cannot be reached',
    data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]
  }
  /** The promise's value, or 'TIMEOUT' after `ms` (what the code before these fixes never ended). */
  const within = <T>(ms: number, promise: Promise<T>) =>
    Promise.race([promise, new Promise<'TIMEOUT'>(resolve => setTimeout(resolve, ms, 'TIMEOUT').unref())])

  t.test('PostgreSQL out of reach: Unavailable on JSON-RPC and HTTP+JSON (503, Retry-After), then served again', async t => {
    let down = false
    const { proxy, server, task, stores } = await serverBehindProxy(t, () => down ? 'refuse' : 'forward')
    down = true
    proxy.cut()
    const { error } = await call(server.endpoint, 'GetTask', { id: task.id })
    t.equal(error.code, -32603)
    t.match(error.message, /unavailable/i)
    t.same(error.data, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }])
    const reply = await rest(server.endpoint, 'GET', `/tasks/${task.id as string}`)
    t.equal(reply.status, 503)
    t.equal(reply.headers.get('retry-after'), '1')
    t.equal(reply.body.error.status, 'UNAVAILABLE')

    const created = await stores.taskStore.create({ id: 'while-down', contextId: 'ctx', status: { state: 'TASK_STATE_SUBMITTED' } }, { tenant: '' }).catch((error: unknown) => error)
    t.equal(toA2AError(created).row.httpStatus, 503, 'a transaction gets no connection either: Unavailable')

    down = false
    t.equal((await result(server.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_COMPLETED', 'back: served again')
  })

  t.test('PostgreSQL that stops answering: a call waits connectionTimeout for a connection, then is Unavailable', async t => {
    // pg's timers: an idle connection's idle timeout, and the connectionTimeout of a connect.
    const pgTimers = timeoutsMadeIn(t, '/node_modules/pg')
    let hanging = false
    const { proxy, server, task } = await serverBehindProxy(t, () => hanging ? 'hang' : 'forward', { connectionTimeout: 300 })
    hanging = true
    proxy.cut()
    // Once the pool has let its cut connections go, the call needs a new one (else it may fail at once on a dead one).
    await eventually(() => pgTimers.every(timer => timer.ended))
    const made = pgTimers.length
    const { error } = await call(server.endpoint, 'GetTask', { id: task.id })
    t.equal(error.code, -32603)
    t.match(error.message, /unavailable/i)
    const connectTimers = pgTimers.slice(made)
    t.ok(connectTimers.length > 0 && connectTimers.every(timer => timer.delay === 300), 'the call waited for a connection with connectionTimeout (pg-pool\'s and its client\'s timers)')
    t.ok(connectTimers.some(timer => timer.fired), 'and was answered once that wait ran out')
  })

  t.test('PostgreSQL out of reach as an execution ends: once it is back, the task ends FAILED (it is not left WORKING)', async t => {
    let down = false
    // Refused, a connection fails at once: no connectionTimeout to wait for.
    const proxy = await postgresProxy(url, () => down ? 'refuse' : 'forward')
    t.teardown(() => proxy.close())
    const schema = uniqueSchema('outage')
    t.teardown(() => dropSchemas(url, [schema]))
    const stores = await openPostgresStores({ connectionString: proxy.url, schema })
    t.teardown(() => stores.close())
    const { executor, finish } = finishing()
    const { endpoint, logged } = await loggingServer(t, { taskStore: stores.taskStore, pushConfigStore: stores.pushConfigStore, executor })
    const { task } = await result(endpoint, 'SendMessage', { message: userMessage('x'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    down = true
    proxy.cut()
    finish()
    await eventually(() => logged(TRYING_AGAIN).length === 1)
    down = false
    await eventually(async () => (await call(endpoint, 'GetTask', { id: task.id })).result?.status.state === 'TASK_STATE_FAILED', 5000)
    t.same((await result(endpoint, 'GetTask', { id: task.id })).status.message.parts, [{ text: 'the agent failed' }])
  })

  t.test('connectionTimeout is checked', async t => {
    for (const bad of [-1, 1.5, 'x']) {
      await t.rejects(openPostgresStores({ connectionString: url, connectionTimeout: bad as number }), { name: 'TypeError', message: /connectionTimeout/ }, String(bad))
    }
  })

  t.test('a connection lost during a transaction (its backend terminated): the call fails Unavailable, the process lives on, the next one is served', async t => {
    const pool = new pg.Pool({ connectionString: url })
    // The pool is the test's: its idle connections' errors are its to hear.
    pool.on('error', () => {})
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    const schema = uniqueSchema('txlost')
    const { taskStore } = await openPostgresStores({ pool, schema })
    t.teardown(async () => {
      await pool.end()
      await admin.end()
      await dropSchemas(url, [schema])
    })
    // The next transaction's BEGIN answered, its backend is terminated; BEGIN returns once the
    // connection has ended, so the statements after it meet a connection already lost (pg
    // emits 'error' on the client, which pg-pool does not hear while it is checked out).
    let armed = true
    const wrapped = new WeakSet<pg.PoolClient>()
    pool.on('acquire', client => {
      if (wrapped.has(client)) return
      wrapped.add(client)
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>
      client.query = (async (...args: unknown[]) => {
        const answer = await query(...args)
        if (armed && args[0] === 'BEGIN') {
          armed = false
          const ended = new Promise(resolve => client.once('end', resolve))
          await admin.query('SELECT pg_terminate_backend($1)', [(client as unknown as { processID: number }).processID])
          await ended
        }
        return answer
      }) as typeof client.query
    })
    const scope = { tenant: '' }
    const task = (id: string): Task => ({ id, contextId: `ctx-${id}`, status: { state: 'TASK_STATE_SUBMITTED' }, history: [{ messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text: id }] }] })
    const failure = await taskStore.create(task('lost'), scope).then(() => undefined, (error: unknown) => error)
    t.equal(armed, false, 'the creation, a transaction, lost its connection')
    const error = toA2AError(failure)
    t.same({ code: error.row.jsonRpcCode, message: error.message, details: error.details }, {
      code: UNAVAILABLE.code, message: UNAVAILABLE.message, details: UNAVAILABLE.data
    }, 'Unavailable, with a RetryInfo')
    t.equal(await taskStore.create(task('next'), scope), 1, 'the next transaction is served')
    t.equal(await taskStore.get('lost', scope), undefined, 'nothing of the lost one was written')
  })

  t.test('a database gone silent on open connections: each statement sent there is Unavailable after queryTimeout, its connection discarded; the server serves on new ones', async t => {
    const { proxy, server, task, stores } = await serverBehindProxy(t, () => 'forward', { queryTimeout: 300 })
    proxy.silence()
    // Ten at once: those that get one of the silent connections, the rest new ones.
    const calls = () => Promise.all(Array.from({ length: 10 }, () => within(5000, call(server.endpoint, 'GetTask', { id: task.id }))))
    const answers = await calls()
    t.notOk(answers.includes('TIMEOUT'), 'every call was answered')
    const failed = answers.filter(answer => answer !== 'TIMEOUT' && answer.error !== undefined)
    t.ok(failed.length > 0, `${failed.length} call(s) met a silent connection`)
    for (const answer of failed) t.same(answer.error, UNAVAILABLE)
    const again = await calls()
    t.ok(again.every(answer => answer !== 'TIMEOUT' && answer.result?.id === task.id), 'the silent connections were not given back to the pool: every call is served')

    // A transaction (a task's creation) on a silent connection: discarded, no ROLLBACK waited for on it.
    proxy.silence()
    const created = await within(5000, stores.taskStore.create({ id: 'silent', contextId: 'ctx', status: { state: 'TASK_STATE_SUBMITTED' } }, { tenant: '' }).catch((error: unknown) => error))
    const error = toA2AError(created)
    t.same({ code: error.row.jsonRpcCode, message: error.message, details: error.details }, { code: UNAVAILABLE.code, message: UNAVAILABLE.message, details: UNAVAILABLE.data })
  })

  t.test('stores.close() with a statement on a silent connection (no queryTimeout): the connection is cut after closeTimeout', async t => {
    const { proxy, server, task, stores } = await serverBehindProxy(t, () => 'forward', { queryTimeout: 0, closeTimeout: 200 })
    proxy.silence()
    const held = within(5000, call(server.endpoint, 'GetTask', { id: task.id }))
    await new Promise(resolve => setTimeout(resolve, 100))
    t.equal(await within(5000, stores.close().then(() => 'closed')), 'closed')
    const answer = await held
    t.same(answer === 'TIMEOUT' ? answer : answer.error, UNAVAILABLE, 'the statement fails with its connection')
  })

  t.test('queryTimeout and closeTimeout are checked', async t => {
    for (const name of ['connectionTimeout', 'queryTimeout', 'closeTimeout']) {
      for (const bad of [-1, 1.5, 'x']) {
        await t.rejects(openPostgresStores({ connectionString: url, [name]: bad }), new TypeError(`openPostgresStores: ${name} must be an integer >= 0`), `${name} ${bad}`)
      }
      await t.rejects(openPostgresStores({ connectionString: url, [name]: 2 ** 31 }), new TypeError(`openPostgresStores: ${name} must be at most 2147483647 ms`), `${name} 2 ** 31`)
    }
    const schema = uniqueSchema('unbounded')
    t.teardown(() => dropSchemas(url, [schema]))
    const unbounded = await openPostgresStores({ connectionString: url, schema, queryTimeout: 0, closeTimeout: 0 })
    await unbounded.close()
    t.pass('0: no bound')
  })
}
