// The PostgreSQL LISTEN/NOTIFY event bus (postgresBus): the contract every bus across
// instances keeps (test/helpers/bus-contract.ts), then what is its own: events over
// NOTIFY's 8000-byte limit go through a table, in order with the others; old overflow
// rows are swept; a burst of tens of thousands arrives whole and in order; close() sends
// what is still queued; a lost listening connection is made again, however many tries that
// takes, and a stream of a task that ended meanwhile then gets it as stored; against a
// database that never answers, queued publishes are lost after connectionTimeout and close()
// returns; connections that go silent (no reset) are noticed: the listening one by its check
// or a LISTEN past queryTimeout, a publish past queryTimeout is lost, and close() cuts them
// after closeTimeout; options are checked.
import net from 'node:net'
import pg from 'pg'
import t, { type Test } from 'tap'
import { InvalidOptionError, PostgresEventBus, postgresBus, type BusCommand, type StreamResponse } from '../lib/index.js'
import { busContract } from './helpers/bus-contract.js'
import { streamAcrossGap } from './helpers/bus-gap.js'
import { eventually } from './helpers/server.js'
import { dataOnlyRole, dropSchemas, postgresProxy, requirePostgres, uniqueSchema } from './helpers/postgres.js'

const url = await requirePostgres(t)
if (url !== undefined) {
  const prefix = `a2a_t${process.pid}_`
  await busContract(t, (url, schema) => postgresBus({ connectionString: url, schema, channelPrefix: prefix }))

  const schema = uniqueSchema('pgbus')
  const pool = new pg.Pool({ connectionString: url })
  const buses: PostgresEventBus[] = []
  const bus = (options: { overflowRetention?: number } = {}) => {
    const made = new PostgresEventBus({ pool, schema, channelPrefix: prefix, ...options })
    buses.push(made)
    return made
  }
  t.teardown(async () => {
    await Promise.all(buses.map(made => made.close()))
    await pool.end()
    await dropSchemas(url, [schema])
  })
  const topic = 'tenant\u0000task'
  const event = (text: string): StreamResponse => ({ message: { messageId: text, role: 'ROLE_AGENT', parts: [{ text }] } })
  const overflowRows = async () => Number((await pool.query(`SELECT count(*) AS n FROM ${pg.escapeIdentifier(schema)}.a2a_bus_overflow`)).rows[0].n)
  /** Resolves with the first `count` events the bus delivers on `topic`; `versions` gets their versions. */
  const received = (on: PostgresEventBus, count: number, versions: Array<number | undefined> = []) => new Promise<StreamResponse[]>(resolve => {
    const events: StreamResponse[] = []
    const unsubscribe = on.subscribe(topic, (delivered, version) => {
      events.push(delivered)
      versions.push(version)
      if (events.length === count) { unsubscribe(); resolve(events) }
    })
  })

  t.test('events over 8000 bytes reach the other instance through the table, in order with the small ones, with their versions', async t => {
    const a = bus()
    const b = bus()
    const sent = Array.from({ length: 30 }, (_, i) => event(i % 7 === 3 ? `big ${i} ${'x'.repeat(9000 + i)}` : `small ${i}`))
    // Every fifth event has no version (a direct reply has none).
    const versionOf = (i: number) => i % 5 === 4 ? undefined : i + 1
    const versions: Array<number | undefined> = []
    const onB = received(b, sent.length, versions)
    await b.ready(topic)
    const local: StreamResponse[] = []
    const unsubscribe = a.subscribe(topic, (delivered) => local.push(delivered))
    for (const [i, one] of sent.entries()) {
      a.publish(topic, one, versionOf(i))
      t.equal(local.length, i + 1, 'a listener of the publishing instance has the event before publish returns')
    }
    unsubscribe()
    t.same(await onB, sent, 'every event once, in publication order')
    t.same(versions, sent.map((_, i) => versionOf(i)), 'each with its version, the large ones too')
    t.same(local, sent, 'the publisher\'s own listener saw each once: its own notifications are not delivered again')
    t.equal(await overflowRows(), 4, 'the four large events (3, 10, 17, 24) are rows')
  })

  t.test('a role with data privileges only uses an overflow table an administrator made: no CREATE is asked of it', async t => {
    const big = event(`big ${'x'.repeat(9000)}`)
    const a = bus()
    const listener = bus()
    const first = received(listener, 1)
    await listener.ready(topic)
    a.publish(topic, big)
    await first
    t.ok(await overflowRows() >= 1, 'the table is there, made by the test\'s own role')
    const S = pg.escapeIdentifier(schema)
    const asRole = await dataOnlyRole(t, url, `GRANT USAGE ON SCHEMA ${S} TO $ROLE; GRANT SELECT, INSERT, DELETE ON ${S}.a2a_bus_overflow TO $ROLE`)
    const rolePool = new pg.Pool({ connectionString: asRole })
    const publisher = new PostgresEventBus({ pool: rolePool, schema, channelPrefix: prefix })
    t.teardown(async () => {
      await publisher.close()
      await rolePool.end()
    })
    const onListener = received(listener, 1)
    publisher.publish(topic, big)
    t.same(await onListener, [big], 'the large event went through the table, published by the role')
  })

  t.test('publishing an overflow sweeps the rows older than the retention', async t => {
    const before = await overflowRows()
    t.ok(before > 0)
    const sweeper = bus({ overflowRetention: 0 })
    const listening = bus()
    const onB = received(listening, 1)
    await listening.ready(topic)
    const big = event(`big ${'y'.repeat(10_000)}`)
    sweeper.publish(topic, big)
    t.same(await onB, [big], 'the row of this statement is read before the next sweep')
    t.equal(await overflowRows(), 1, 'only the row written with the sweep is left')
  })

  t.test('close() sends what is still queued before it ends the connections', async t => {
    const closing = new PostgresEventBus({ pool, schema, channelPrefix: prefix })
    const listening = bus()
    const sent = Array.from({ length: 20 }, (_, i) => event(`queued ${i}`))
    const onB = received(listening, sent.length)
    await listening.ready(topic)
    for (const one of sent) closing.publish(topic, one)
    await closing.close()
    t.same(await onB, sent)
  })

  t.test('a burst of 30,000 publishes, large ones among them, more while the first are sent: the other instance gets each once, in order, the outbox drained by no Array shift()', async t => {
    const a = bus()
    const b = bus()
    const sent = Array.from({ length: 30_000 }, (_, i) => event(i % 5000 === 2500 ? `big ${i} ${'x'.repeat(9000)}` : `e ${i}`))
    const onB = received(b, sent.length)
    await b.ready(topic)
    // Array.prototype.shift() copies an array longer than about 16K items at each call: the
    // outbox is not to be drained with it (a short array's shift is cheap, and allowed).
    const { shift } = Array.prototype
    let longestShifted = 0
    Array.prototype.shift = function (this: unknown[]) {
      longestShifted = Math.max(longestShifted, this.length)
      return shift.call(this)
    }
    let delivered: StreamResponse[]
    try {
      const first = received(b, 1)
      for (const one of sent.slice(0, 25_000)) a.publish(topic, one)
      // The first statement has arrived, of some 250: these queue behind what is being sent.
      await first
      for (const one of sent.slice(25_000)) a.publish(topic, one)
      delivered = await onB
    } finally {
      Array.prototype.shift = shift
    }
    t.equal(delivered.length, sent.length)
    t.ok(delivered.every((one, i) => one.message?.messageId === sent[i]?.message?.messageId), 'every event once, in publication order')
    t.ok(longestShifted <= 100, `the longest array shift() was called on held ${longestShifted}`)
  })

  t.test('the listening connection lost and the next connections refused: the bus tries until one succeeds, then has every channel again', async t => {
    // A proxy to PostgreSQL that closes at once the connections `refusing` counts down.
    let refusing = 0
    let refused = 0
    const proxy = await postgresProxy(url, () => {
      if (refusing === 0) return 'forward'
      refusing--
      refused++
      return 'refuse'
    })
    const applicationName = `a2a_bus_relisten_${process.pid}`
    const proxiedPool = new pg.Pool({ connectionString: proxy.url, application_name: applicationName })
    const listening = new PostgresEventBus({ pool: proxiedPool, channelPrefix: prefix })
    t.teardown(async () => {
      await listening.close()
      await proxiedPool.end()
      await proxy.close()
    })
    const publishing = bus()
    const later = 'tenant\u0000later'
    const events = new Map<string, StreamResponse[]>([[topic, []], [later, []]])
    const commands: BusCommand[] = []
    listening.subscribe(topic, (delivered) => events.get(topic)?.push(delivered))
    await listening.onCommand('relisten-instance', (command) => commands.push(command))
    await listening.ready(topic)

    refusing = 2
    const { rowCount } = await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [applicationName])
    t.equal(rowCount, 1, 'the listening connection, the bus\'s only one, is terminated')
    // Followed while the bus has no connection.
    listening.subscribe(later, (delivered) => events.get(later)?.push(delivered))
    const command: BusCommand = { type: 'cancel', tenant: 'tenant', taskId: 'relisten' }
    const sent = (one: string) => event(`after the loss, to ${JSON.stringify(one)}`)
    const deadline = Date.now() + 8000
    while (events.get(topic)?.length === 0 || events.get(later)?.length === 0 || commands.length === 0) {
      if (Date.now() > deadline) break
      for (const one of events.keys()) publishing.publish(one, sent(one))
      publishing.command('relisten-instance', command)
      await new Promise(resolve => setTimeout(resolve, 200))
    }
    t.equal(refused, 2, 'two connections were refused before one went through')
    t.same(events.get(topic)?.[0], sent(topic), 'a channel followed before the loss is LISTENed again')
    t.same(events.get(later)?.[0], sent(later), 'a channel followed during the loss is LISTENed')
    t.same(commands[0], command, 'the command channel is LISTENed again')
  })

  t.test('a stream on B whose listening connection is lost as the task ends on A: once B LISTENs again it gets the task as stored, and ends', async t => {
    const applicationName = `a2a_bus_gap_${process.pid}`
    const onB = new URL(url)
    onB.searchParams.set('application_name', applicationName)
    const busB = postgresBus({ connectionString: onB.href, channelPrefix: prefix })
    let resubscribed = 0
    const stop = busB.onResubscribe(() => resubscribed++)
    t.teardown(stop)
    const { events, ended } = await streamAcrossGap(t, postgresBus({ connectionString: url, channelPrefix: prefix }), busB, async () => {
      const { rows } = await pool.query("SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'", [applicationName])
      t.equal(rows.length, 1, 'B\'s listening connection, terminated')
      // Gone: nothing NOTIFYed from now on reaches it.
      while ((await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0].pid])).rowCount !== 0) await new Promise(resolve => setTimeout(resolve, 10))
    })
    t.ok(ended, 'the stream ended')
    t.same(events.map(({ data }) => data.result.task === undefined ? data : [data.result.task.status.state, data.result.task.artifacts?.[0].parts[0].text]), [
      ['TASK_STATE_WORKING', undefined],
      ['TASK_STATE_COMPLETED', 'done']
    ], 'the snapshot, then the task as stored once B listened again')
    t.equal(resubscribed, 1, 'the bus told its listeners once')
  })

  t.test('a bus closed while it has no listening connection tries no more', async t => {
    let connections = 0
    const refusing = net.createServer(socket => { connections++; socket.destroy() })
    await new Promise<void>(resolve => refusing.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise(resolve => refusing.close(resolve)))
    const closing = new PostgresEventBus({ connectionString: `postgres://nobody@127.0.0.1:${(refusing.address() as net.AddressInfo).port}/test`, channelPrefix: prefix })
    closing.subscribe(topic, () => {})
    await closing.ready(topic)
    await new Promise(resolve => setTimeout(resolve, 1500))
    t.equal(connections, 2, 'the first connection, and a second try a second later')
    await closing.close()
    await new Promise(resolve => setTimeout(resolve, 1500))
    t.equal(connections, 2, 'none after close()')
  })

  t.test('a database that takes connections and never answers: publishes queued on a topic are lost after connectionTimeout, and close() returns', async t => {
    let connections = 0
    const proxy = await postgresProxy(url, () => { connections++; return 'hang' })
    t.teardown(() => proxy.close())
    const stuck = postgresBus({ connectionString: proxy.url, channelPrefix: prefix, connectionTimeout: 200 })
    const delivered: string[] = []
    stuck.subscribe(topic, (one) => delivered.push(one.message?.messageId as string))
    await stuck.ready(topic)
    t.equal(connections, 1, 'the listening connection, given up')
    // Small events go by NOTIFY in batches, large ones (over 8000 bytes) one query each.
    const sent: string[] = []
    for (let i = 0; i < 300; i++) {
      const one = event(i % 2 === 0 ? `small ${i}` : `large ${i} ${'x'.repeat(10_000)}`)
      sent.push(one.message?.messageId as string)
      stuck.publish(i % 2 === 0 ? topic : 'tenant\u0000large', one)
    }
    t.same(delivered, sent.filter(id => id.startsWith('small')), 'this instance\'s listener had its events at once')
    await stuck.close()
    t.equal(connections, 3, 'one try per topic, for every event queued on it')
  })

  t.test('the overflow table\'s check failing once (database out of reach): the next large event is stored once it is back', async t => {
    let down = true
    const proxy = await postgresProxy(url, () => down ? 'refuse' : 'forward')
    const proxiedPool = new pg.Pool({ connectionString: proxy.url })
    proxiedPool.on('error', () => {})
    t.teardown(async () => {
      await proxiedPool.end()
      await proxy.close()
    })
    // The queries the bus makes, settled or not: the test waits for the failing one.
    const queries: Array<Promise<unknown>> = []
    const query = proxiedPool.query.bind(proxiedPool) as (...args: unknown[]) => Promise<unknown>
    proxiedPool.query = ((...args: unknown[]) => {
      const made = query(...args)
      queries.push(made.catch(() => {}))
      return made
    }) as typeof proxiedPool.query
    const otherSchema = uniqueSchema('pgbus_overflow')
    t.teardown(() => dropSchemas(url, [otherSchema]))
    const publishing = new PostgresEventBus({ pool: proxiedPool, schema: otherSchema, channelPrefix: prefix })
    publishing.publish(topic, event(`lost ${'x'.repeat(9000)}`))
    t.equal(queries.length, 1, 'the check of the overflow table')
    await queries[0]
    await new Promise(resolve => setImmediate(resolve))
    down = false
    publishing.publish(topic, event(`stored ${'x'.repeat(9000)}`))
    await publishing.close()
    const table = `${pg.escapeIdentifier(otherSchema)}.a2a_bus_overflow`
    const made = (await pool.query('SELECT to_regclass($1) IS NOT NULL AS made', [table])).rows[0].made
    t.equal(made, true, 'the overflow table was made on the next try')
    if (!made) return
    const { rows } = await pool.query(`SELECT payload FROM ${table}`)
    t.same(rows.map(row => JSON.parse(row.payload)[3].message.messageId.split(' ')[0]), ['stored'])
  })

  /** The promise's value, or 'TIMEOUT' after `ms` (what the code before these fixes never ended). */
  const within = <T>(ms: number, promise: Promise<T>) =>
    Promise.race([promise, new Promise<'TIMEOUT'>(resolve => setTimeout(resolve, ms, 'TIMEOUT').unref())])
  /** Publishes `event(text)` from `from` every 100 ms until `to` has it on `on`, or `ms` passed; whether it arrived. */
  const reaches = async (from: PostgresEventBus, to: PostgresEventBus, on: string, text: string, ms = 5000) => {
    let arrived = false
    const unsubscribe = to.subscribe(on, (delivered) => { if (delivered.message?.messageId === text) arrived = true })
    const deadline = Date.now() + ms
    while (!arrived && Date.now() < deadline) {
      from.publish(on, event(text))
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    unsubscribe()
    return arrived
  }

  /** A bus whose connections go through a proxy the test can silence; both closed when `t` ends. */
  async function proxiedBus (t: Test, options: Parameters<typeof postgresBus>[0]) {
    const proxy = await postgresProxy(url as string)
    const proxied = postgresBus({ connectionString: proxy.url, channelPrefix: prefix, ...options })
    t.teardown(async () => {
      await proxied.close()
      await proxy.close()
    })
    return { proxy, bus: proxied }
  }

  t.test('the listening connection gone silent (no reset): its check notices within listenerCheckInterval, and the bus LISTENs again on a new one', async t => {
    const { proxy, bus: listening } = await proxiedBus(t, { listenerCheckInterval: 200 })
    const publishing = bus()
    listening.subscribe(topic, () => {})
    await listening.ready(topic)
    t.ok(await reaches(publishing, listening, topic, 'before'), 'listening')
    proxy.silence()
    t.ok(await reaches(publishing, listening, topic, 'after'), 'listening again after the silence')
  })

  t.test('a LISTEN unanswered past queryTimeout: ready() ends, and the channel is LISTENed on a new connection', async t => {
    const { proxy, bus: listening } = await proxiedBus(t, { listenerCheckInterval: 0, queryTimeout: 300 })
    const publishing = bus()
    listening.subscribe(topic, () => {})
    await listening.ready(topic)
    proxy.silence()
    const later = 'tenant\u0000silent-later'
    listening.subscribe(later, () => {})
    t.equal(await within(3000, listening.ready(later).then(() => 'ready')), 'ready', 'ready() ends')
    t.ok(await reaches(publishing, listening, later, 'on the new connection'), 'the channel is LISTENed again')
  })

  t.test('a publish unanswered past queryTimeout is lost with those queued behind it, and its connection discarded; later publishes go on new ones', async t => {
    const { proxy, bus: publishing } = await proxiedBus(t, { queryTimeout: 300 })
    const listening = bus()
    const delivered: string[] = []
    listening.subscribe(topic, (one) => delivered.push(one.message?.messageId as string))
    await listening.ready(topic)
    t.ok(await reaches(publishing, listening, topic, 'before'), 'publishing')
    proxy.silence()
    publishing.publish(topic, event('on the silent connection'))
    publishing.publish(topic, event('queued behind it'))
    t.ok(await reaches(publishing, listening, topic, 'after'), 'later publishes reach the other instance')
    t.notOk(delivered.includes('on the silent connection') || delivered.includes('queued behind it'), 'the publish that got no answer, and the one queued behind it, are lost')
  })

  t.test('close() with a publish on a silent connection (no queryTimeout): past closeTimeout what is queued is lost and the connections are cut', async t => {
    const proxy = await postgresProxy(url)
    t.teardown(() => proxy.close())
    const closing = postgresBus({ connectionString: proxy.url, channelPrefix: prefix, queryTimeout: 0, closeTimeout: 200 })
    const listening = bus()
    const delivered: string[] = []
    listening.subscribe(topic, (one) => delivered.push(one.message?.messageId as string))
    await listening.ready(topic)
    closing.subscribe(topic, () => {})
    await closing.ready(topic)
    t.ok(await reaches(closing, listening, topic, 'before'), 'publishing')
    proxy.silence()
    closing.publish(topic, event('on the silent connection'))
    closing.publish(topic, event('queued behind it'))
    t.equal(await within(3000, closing.close().then(() => 'closed')), 'closed', 'close() returns')
    t.notOk(delivered.includes('on the silent connection') || delivered.includes('queued behind it'))
    await eventually(() => proxy.connections() === 0)
    t.pass('the listening connection and the pool\'s are cut')
  })

  t.test('the longest prefix accepted carries commands; one byte more is refused', async t => {
    const longest = `${prefix}${'p'.repeat(28 - prefix.length)}`
    t.equal(Buffer.byteLength(longest), 28)
    const sender = new PostgresEventBus({ pool, channelPrefix: longest })
    const receiver = new PostgresEventBus({ pool, channelPrefix: longest })
    t.teardown(() => Promise.all([sender.close(), receiver.close()]))
    const commands: BusCommand[] = []
    await receiver.onCommand('longest-instance', (command) => commands.push(command))
    const command: BusCommand = { type: 'cancel', tenant: 'tenant', taskId: 'longest' }
    sender.command('longest-instance', command)
    const deadline = Date.now() + 3000
    while (commands.length === 0 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
    t.same(commands, [command])
    t.throws(() => new PostgresEventBus({ pool, channelPrefix: `${longest}p` }), new InvalidOptionError('channelPrefix', 'must be at most 28 bytes'))
    t.throws(() => new PostgresEventBus({ pool, channelPrefix: `${'é'.repeat(14)}p` }), new InvalidOptionError('channelPrefix', 'must be at most 28 bytes'), 'bytes, not characters')
  })

  t.test('options are checked', async t => {
    t.throws(() => new PostgresEventBus({}), new InvalidOptionError('connectionString', 'give exactly one of connectionString and pool'))
    t.throws(() => new PostgresEventBus({ pool, overflowRetention: -1 }), new InvalidOptionError('overflowRetention', 'must be an integer >= 0'))
    for (const name of ['connectionTimeout', 'queryTimeout', 'listenerCheckInterval', 'closeTimeout']) {
      for (const bad of [-1, 1.5, 'x']) {
        t.throws(() => new PostgresEventBus({ connectionString: url, [name]: bad }), new InvalidOptionError(name, 'must be an integer >= 0'), `${name} ${bad}`)
      }
      t.throws(() => new PostgresEventBus({ connectionString: url, [name]: 2 ** 31 }), new InvalidOptionError(name, 'must be at most 2147483647 ms'), `${name} 2 ** 31`)
    }
  })
}
