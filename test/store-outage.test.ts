// A store that cannot be reached for a while (PostgreSQL behind a proxy that goes down): calls
// get Unavailable with a RetryInfo, worth another attempt, not an internal error; once the
// database is back, the same server serves again.
import t, { type Test } from 'tap'
import { openPostgresStores } from '../lib/index.js'
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
  const serverBehindProxy = async (t: Test, mode: () => 'forward' | 'refuse' | 'hang', options: { connectionTimeout?: number } = {}) => {
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
    return { proxy, server, task }
  }

  t.test('PostgreSQL out of reach: Unavailable on JSON-RPC and HTTP+JSON (503, Retry-After), then served again', async t => {
    let down = false
    const { proxy, server, task } = await serverBehindProxy(t, () => down ? 'refuse' : 'forward')
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
}
