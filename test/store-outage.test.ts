// A store that cannot be reached for a while (PostgreSQL behind a proxy that goes down): calls
// get Unavailable with a RetryInfo, worth another attempt, not an internal error; once the
// database is back, the same server serves again. A connection lost during a transaction
// crashes nothing; one gone silent holds a statement queryTimeout at most, and close()
// closeTimeout at most.
import pg from 'pg'
import t, { type Test } from 'tap'
import { openPostgresStores, type Task } from '../lib/index.js'
import { toA2AError } from '../lib/errors/index.js'
import { dropSchemas, postgresProxy, requirePostgres, uniqueSchema } from './helpers/postgres.js'
import { rest } from './helpers/rest.js'
import { call, eventually, result, startServer, userMessage } from './helpers/server.js'
import { timeoutsMadeIn } from './helpers/timers.js'

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
