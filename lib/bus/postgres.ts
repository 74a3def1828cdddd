// An event bus across instances on PostgreSQL LISTEN/NOTIFY, for deployments without
// Redis. As on the Redis bus, listeners of this process are served synchronously by an
// in-memory bus; every event is also NOTIFYed on its topic's channel, and one dedicated
// client LISTENs on the channels of the topics followed here. A NOTIFY payload must be
// shorter than 8000 bytes: a larger event is stored in a table, and the notification
// carries the row's key. Commands to an instance (lib/cluster) go on the instance's channel.
import { createHash, randomUUID } from 'node:crypto'
import type pg from 'pg'
import { InvalidOptionError } from '../options.js'
import type { StreamResponse } from '../schema/wire.js'
import { deliverCommand } from './commands.js'
import { MemoryEventBus } from './memory.js'
import { settlesWithin } from '../settles.js'
import {
  cut, DEFAULT_CLOSE_TIMEOUT, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_QUERY_TIMEOUT, loadPg, ownPool, tableExists, timerProblem, type OwnPool
} from '../store/pg-transaction.js'
import type { BusCommand, BusListener, CommandHandler, EventBus } from './types.js'

export interface PostgresEventBusOptions {
  /** A connection string, e.g. `postgres://user@127.0.0.1:5432/db`. Give this or `pool`. */
  connectionString?: string
  /** An existing pool to publish on (the bus does not end it); the listening client uses its settings. */
  pool?: pg.Pool
  /** The schema of the overflow table (`a2a_bus_overflow`), created when first needed. Default `public`. */
  schema?: string
  /** Prefix of the channels, at most 28 bytes (a channel name has at most 63). Default `a2a_events_`. */
  channelPrefix?: string
  /** How long an overflow row is kept for the instances to read, in ms. Default 60,000. */
  overflowRetention?: number
  /**
   * With `connectionString`: how long the bus waits for a connection of its pool, and its
   * listening connection to be made, in ms. A publish that gets none in time is lost with the
   * others queued on its topic (the listeners of this instance had them), so a database that
   * stopped answering holds neither memory nor close() for ever. 0 waits without end. Default 10,000.
   */
  connectionTimeout?: number
  /**
   * With `connectionString`: how long a statement on a connection of the bus (its pool's, and
   * the listening one) waits for its answer, in ms. A publish past it is lost as one that got
   * no connection, and its connection is discarded; a LISTEN past it drops the listening
   * connection, made again as after any loss. 0 waits without end. Default 10,000.
   */
  queryTimeout?: number
  /**
   * How often the listening connection is checked, in ms: a `SELECT 1` on it not answered by
   * the next check means the connection went silent (a network path dropped): the bus drops
   * it, makes another and LISTENs again. 0: no check. Default 10,000.
   */
  listenerCheckInterval?: number
  /**
   * How long close() waits for the publishes still queued and the connections to end, in ms;
   * past it what is still queued is lost and the connections are cut. 0 waits without end.
   * Default 5,000.
   */
  closeTimeout?: number
}

/** NOTIFY refuses a payload of 8000 bytes or more (PostgreSQL's default build). */
const MAX_PAYLOAD_BYTES = 7999
/**
 * PostgreSQL truncates identifiers to 63 bytes (and pg_notify refuses longer ones): the longest
 * channel, an instance's command channel, is the prefix, `command_` and a 27-character hash.
 */
const MAX_PREFIX_BYTES = 28
/** Notifications sent in one statement, at most. */
const MAX_BATCH = 100
/** After the listening connection is lost, or failed to connect, the wait before the next try. */
const RECONNECT_DELAY_MS = 1000
/** The `listenerCheckInterval` of the bus, in ms. */
const DEFAULT_LISTENER_CHECK_INTERVAL = 10_000

/**
 * On the wire: sender, its sequence number (identical payloads in one transaction would be
 * folded), topic, the event (null when it overflowed), its version, and the overflow row's key.
 */
type Notification = [sender: string, seq: number, topic: string, event: StreamResponse | null, version: number | null, overflow?: string]

interface Outbox {
  payloads: string[]
  sending: boolean
}

/** The listening client, the promise of its connection, and whether its last check is still unanswered. */
interface Listener {
  client: pg.Client
  connected: Promise<pg.Client>
  checking: boolean
}

export class PostgresEventBus implements EventBus {
  readonly #local = new MemoryEventBus()
  /** The `pg` module, loaded when the bus is made. */
  readonly #pg: typeof pg
  readonly #pool: pg.Pool
  /** The pool, when the bus made it (from `connectionString`). */
  readonly #ownPool: OwnPool | undefined
  readonly #closeTimeout: number
  readonly #S: string
  readonly #schema: string
  readonly #prefix: string
  readonly #retention: number
  /** Marks this instance's own notifications, which its listeners already had. */
  readonly #instance = randomUUID()
  #seq = 0
  /** Topics LISTENed on, with the promise of the LISTEN having run. */
  readonly #channels = new Map<string, Promise<void>>()
  /** Command channels of the instances served here, with their handlers. */
  readonly #commands = new Map<string, CommandHandler>()
  readonly #outboxes = new Map<string, Outbox>()
  #listener: Listener | undefined
  /** The next try to connect the listening client and LISTEN again, while one is due. */
  #reconnect: NodeJS.Timeout | undefined
  /** The timer of the listening connection's checks (`listenerCheckInterval`). */
  #check: NodeJS.Timeout | undefined
  #overflowTable: Promise<unknown> | undefined
  /** Set while an overflow row is being read: later notifications wait behind it, in order. */
  #inbound: Promise<void> | undefined
  #closed = false
  /** Resolves when the last outbox drains, for close(). */
  #drained: (() => void) | undefined
  /** Called once the topics are LISTENed on again after the listening connection was lost (onResubscribe). */
  readonly #resubscribed = new Set<() => void>()

  constructor (options: PostgresEventBusOptions) {
    if ((options.connectionString === undefined) === (options.pool === undefined)) throw new InvalidOptionError('connectionString', 'give exactly one of connectionString and pool')
    const {
      connectionTimeout = DEFAULT_CONNECTION_TIMEOUT, queryTimeout = DEFAULT_QUERY_TIMEOUT, closeTimeout = DEFAULT_CLOSE_TIMEOUT,
      listenerCheckInterval = DEFAULT_LISTENER_CHECK_INTERVAL
    } = options
    for (const [name, value] of Object.entries({ connectionTimeout, queryTimeout, listenerCheckInterval, closeTimeout })) {
      const problem = timerProblem(value)
      if (problem !== undefined) throw new InvalidOptionError(name, problem)
    }
    this.#closeTimeout = closeTimeout
    this.#pg = loadPg('PostgresEventBus (postgresBus)')
    this.#ownPool = options.pool === undefined
      ? ownPool(this.#pg, options.connectionString as string, { connectionTimeout, queryTimeout })
      : undefined
    this.#pool = this.#ownPool?.pool ?? options.pool as pg.Pool
    this.#schema = options.schema ?? 'public'
    this.#S = this.#pg.escapeIdentifier(this.#schema)
    this.#prefix = options.channelPrefix ?? 'a2a_events_'
    if (Buffer.byteLength(this.#prefix) > MAX_PREFIX_BYTES) throw new InvalidOptionError('channelPrefix', `must be at most ${MAX_PREFIX_BYTES} bytes`)
    this.#retention = options.overflowRetention ?? 60_000
    if (!Number.isSafeInteger(this.#retention) || this.#retention < 0) throw new InvalidOptionError('overflowRetention', 'must be an integer >= 0')
    if (listenerCheckInterval > 0) {
      this.#check = setInterval(() => { this.#checkListener() }, listenerCheckInterval)
      this.#check.unref()
    }
  }

  publish (topic: string, event: StreamResponse, version?: number): void {
    this.#local.publish(topic, event, version)
    if (this.#closed) return
    let outbox = this.#outboxes.get(topic)
    if (outbox === undefined) this.#outboxes.set(topic, outbox = { payloads: [], sending: false })
    outbox.payloads.push(JSON.stringify([this.#instance, ++this.#seq, topic, event, version ?? null] satisfies Notification))
    if (!outbox.sending) void this.#send(topic, outbox)
  }

  subscribe (topic: string, listener: BusListener): () => void {
    const unsubscribe = this.#local.subscribe(topic, listener)
    if (!this.#channels.has(topic)) this.#channels.set(topic, this.#listen('LISTEN', this.#channel(topic)))
    return () => {
      unsubscribe()
      if (this.#local.listenerCount(topic) > 0 || !this.#channels.delete(topic)) return
      void this.#listen('UNLISTEN', this.#channel(topic))
    }
  }

  /** Resolves once events other instances publish on `topic` reach this one's listeners. */
  async ready (topic: string): Promise<void> {
    await this.#channels.get(topic)
  }

  listenerCount (topic?: string): number {
    return this.#local.listenerCount(topic)
  }

  /** Calls `listener` once the topics followed are LISTENed on again after the listening connection was lost. */
  onResubscribe (listener: () => void): () => void {
    this.#resubscribed.add(listener)
    return () => this.#resubscribed.delete(listener)
  }

  command (instance: string, command: BusCommand): void {
    if (this.#closed) return
    this.#pool.query('SELECT pg_notify($1, $2)', [this.#commandChannel(instance), JSON.stringify(command)]).catch(() => {})
  }

  async onCommand (instance: string, handler: CommandHandler): Promise<() => void> {
    const channel = this.#commandChannel(instance)
    this.#commands.set(channel, handler)
    await this.#listen('LISTEN', channel)
    return () => {
      if (this.#commands.get(channel) !== handler) return
      this.#commands.delete(channel)
      void this.#listen('UNLISTEN', channel)
    }
  }

  /**
   * Sends what is still queued, then ends the listening client, and the pool when the bus made
   * it. Past `closeTimeout`, what is still queued is lost, and the listening connection and
   * those of the bus's own pool are cut.
   */
  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#reconnect)
    clearInterval(this.#check)
    const listener = this.#listener
    this.#listener = undefined
    const ended = (async () => {
      if ([...this.#outboxes.values()].some(outbox => outbox.sending)) await new Promise<void>(resolve => { this.#drained = resolve })
      await listener?.connected.then(client => client.end(), () => {})
      await this.#ownPool?.pool.end()
    })()
    if (await settlesWithin(ended, this.#closeTimeout)) return
    // Past closeTimeout (a statement on a connection gone silent): what is still queued is
    // lost, and the connections are cut; what waited on them fails, and the rest of the close
    // follows without being waited for.
    for (const outbox of this.#outboxes.values()) outbox.payloads.length = 0
    if (listener !== undefined) cut(listener.client)
    this.#ownPool?.cut()
  }

  /** The topic's channel: topics hold any character (a NUL even), so the name is a hash. */
  #channel (topic: string): string {
    return this.#prefix + hash(topic)
  }

  /** Longer than any topic's channel, so it is none of them. */
  #commandChannel (instance: string): string {
    return `${this.#prefix}command_${hash(instance)}`
  }

  /**
   * Sends the topic's queued payloads, one statement at a time, so they arrive in order. It takes
   * all those queued at once and walks them with an index (shift() on a burst of tens of thousands
   * would copy the array at each); those published meanwhile are taken on the next round.
   */
  async #send (topic: string, outbox: Outbox): Promise<void> {
    outbox.sending = true
    const channel = this.#channel(topic)
    while (outbox.payloads.length > 0) {
      const pending = outbox.payloads
      outbox.payloads = []
      for (let next = 0; next < pending.length;) {
        const batch = [] as string[]
        while (batch.length < MAX_BATCH && next < pending.length && Buffer.byteLength(pending[next] as string) <= MAX_PAYLOAD_BYTES) {
          batch.push(pending[next++] as string)
        }
        try {
          if (batch.length > 0) await this.#pool.query('SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload', [channel, batch])
          else await this.#sendOverflow(channel, pending[next++] as string)
        } catch {
          // Like a lost Redis publish: the other instances miss the events; this one's listeners had them.
          // Those queued behind go too: against a database out of reach each would wait as long.
          outbox.payloads.length = 0
          break
        }
      }
    }
    outbox.sending = false
    this.#outboxes.delete(topic)
    if (this.#outboxes.size === 0) this.#drained?.()
  }

  /** Stores the payload, sweeps the rows past their retention and notifies the row's key, in one statement. */
  async #sendOverflow (channel: string, payload: string): Promise<void> {
    await (this.#overflowTable ??= this.#createOverflowTable())
    const [sender, seq, topic, , version] = JSON.parse(payload) as Notification
    const key = randomUUID()
    await this.#pool.query(
      `WITH swept AS (DELETE FROM ${this.#S}.a2a_bus_overflow WHERE created_at < now() - $4 * interval '1 millisecond'),
        stored AS (INSERT INTO ${this.#S}.a2a_bus_overflow (key, payload) VALUES ($2, $3))
      SELECT pg_notify($1, $5)`,
      [channel, key, payload, this.#retention, JSON.stringify([sender, seq, topic, null, version, key] satisfies Notification)]
    )
  }

  /** On a failure, of the check as of the creation, the next overflow tries again. */
  async #createOverflowTable (): Promise<unknown> {
    try {
      if (await tableExists(this.#pool, this.#schema, 'a2a_bus_overflow')) return
      // The lock makes concurrent first creations from several instances wait for each other.
      return await this.#pool.query(`
        BEGIN;
        SELECT pg_advisory_xact_lock(hashtext('a2a_bus_overflow'), hashtext(${this.#pg.escapeLiteral(this.#schema)}));
        CREATE SCHEMA IF NOT EXISTS ${this.#S};
        CREATE TABLE IF NOT EXISTS ${this.#S}.a2a_bus_overflow (
          key TEXT PRIMARY KEY,
          payload TEXT NOT NULL,
          created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE INDEX IF NOT EXISTS a2a_bus_overflow_age ON ${this.#S}.a2a_bus_overflow (created_at);
        COMMIT;
      `)
    } catch (error) {
      this.#overflowTable = undefined
      throw error
    }
  }

  /** LISTEN or UNLISTEN; the listening client runs them in call order. */
  async #listen (command: 'LISTEN' | 'UNLISTEN', channel: string): Promise<void> {
    if (this.#closed) return
    const { client, connected } = this.#connect()
    try {
      await connected
      await client.query(`${command} ${this.#pg.escapeIdentifier(channel)}`)
    } catch {
      // The connection was lost, or left the statement unanswered past queryTimeout (it went
      // silent): it is dropped, and the next one LISTENs again on every channel followed then.
      this.#lost(client)
    }
  }

  #connect (): Listener {
    if (this.#listener === undefined) {
      const client = new this.#pg.Client(this.#pool.options)
      client.on('notification', ({ channel, payload }) => {
        if (payload === undefined) return
        const onCommand = this.#commands.get(channel)
        if (onCommand === undefined) this.#receive(payload)
        else deliverCommand(onCommand, payload)
      })
      client.on('error', () => this.#lost(client))
      client.on('end', () => this.#lost(client))
      const connected = client.connect().then(() => client)
      connected.catch(() => this.#lost(client))
      this.#listener = { client, connected, checking: false }
    }
    return this.#listener
  }

  /**
   * Every `listenerCheckInterval`: a connection that went silent (a network path dropped, with
   * no reset) reports nothing, and would deliver nothing for ever. A `SELECT 1` still unanswered
   * at the next check drops it, as a lost one.
   */
  #checkListener (): void {
    const listener = this.#listener
    if (listener === undefined) return
    if (listener.checking) {
      this.#lost(listener.client)
      return
    }
    listener.checking = true
    listener.connected.then(client => client.query('SELECT 1')).then(() => { listener.checking = false }, () => this.#lost(listener.client))
  }

  /**
   * Drops a listening client that was lost or never connected and, after a pause, LISTENs
   * again on a new one; a try that fails the same way schedules the next, until the bus closes.
   */
  #lost (client: pg.Client): void {
    if (this.#listener?.client !== client) return
    this.#listener = undefined
    client.end().catch(() => {})
    if (this.#closed || this.#reconnect !== undefined) return
    this.#reconnect = setTimeout(() => {
      this.#reconnect = undefined
      const listens: Array<Promise<void>> = []
      for (const topic of this.#channels.keys()) {
        const listen = this.#listen('LISTEN', this.#channel(topic))
        this.#channels.set(topic, listen)
        listens.push(listen)
      }
      for (const channel of this.#commands.keys()) void this.#listen('LISTEN', channel)
      // What was NOTIFYed while no connection listened is lost: the listeners are told once
      // they hear again (a try that failed leaves no listener; the next one tells them).
      void Promise.all(listens).then(() => { if (this.#listener !== undefined) for (const listener of this.#resubscribed) listener() })
    }, RECONNECT_DELAY_MS)
    this.#reconnect.unref()
  }

  #receive (payload: string): void {
    let notification: Notification
    try {
      notification = JSON.parse(payload) as Notification
    } catch {
      return
    }
    const [sender, , topic, event, version, overflow] = notification
    if (sender === this.#instance || typeof topic !== 'string') return
    if (this.#inbound === undefined && event !== null) {
      this.#local.publish(topic, event, version ?? undefined)
      return
    }
    // Behind an overflow read, or one itself: delivered once every earlier one was.
    const previous = this.#inbound ?? Promise.resolve()
    const current = previous.then(async () => {
      const delivered = event ?? await this.#readOverflow(overflow)
      if (delivered !== undefined) this.#local.publish(topic, delivered, version ?? undefined)
    })
    this.#inbound = current
    void current.finally(() => { if (this.#inbound === current) this.#inbound = undefined })
  }

  async #readOverflow (key: string | undefined): Promise<StreamResponse | undefined> {
    try {
      const { rows } = await this.#pool.query<{ payload: string }>(`SELECT payload FROM ${this.#S}.a2a_bus_overflow WHERE key = $1`, [key])
      const stored = rows[0]
      return stored === undefined ? undefined : (JSON.parse(stored.payload) as Notification)[3] ?? undefined
    } catch {
      return undefined
    }
  }
}

/** 27 characters of base64url: a channel name of any topic or instance id within 63 bytes. */
function hash (text: string): string {
  return createHash('sha1').update(text).digest('base64url')
}
