// The PostgreSQL LISTEN/NOTIFY event bus (postgresBus): the contract every bus across
// instances keeps (test/helpers/bus-contract.ts), then what is its own: events over
// NOTIFY's 8000-byte limit go through a table, in order with the others; old overflow
// rows are swept; close() sends what is still queued; options are checked.
import pg from 'pg'
import t from 'tap'
import { InvalidOptionError, PostgresEventBus, postgresBus, type StreamResponse } from '../lib/index.js'
import { busContract } from './helpers/bus-contract.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './helpers/postgres.js'

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

  t.test('options are checked', async t => {
    t.throws(() => new PostgresEventBus({}), new InvalidOptionError('connectionString', 'give exactly one of connectionString and pool'))
    t.throws(() => new PostgresEventBus({ pool, channelPrefix: 'p'.repeat(37) }), new InvalidOptionError('channelPrefix', 'must be at most 36 bytes'))
    t.throws(() => new PostgresEventBus({ pool, overflowRetention: -1 }), new InvalidOptionError('overflowRetention', 'must be an integer >= 0'))
  })
}
