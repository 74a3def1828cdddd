// Buses from connection settings, for the `bus` plugin option (`bus: redisBus({ url })`).
// A bus made here owns the connections it opened, and the plugin closes it when Fastify
// closes, after the streams ended.
import type { Redis } from 'ioredis'
import { InvalidOptionError } from '../options.js'
import { optionalRequire } from '../optional-require.js'
import { PostgresEventBus, type PostgresEventBusOptions } from './postgres.js'
import { RedisEventBus, type RedisConnection } from './redis.js'

/**
 * A connection `redisBus` publishes on, or opens and closes: an ioredis `Redis` is one (typed
 * by its shape, as `RedisConnection`). The subscriber is a duplicate of the publisher.
 */
export interface RedisClient extends RedisConnection {
  on (event: 'message', listener: (channel: string, message: string) => void): unknown
  on (event: 'error', listener: (error: Error) => void): unknown
  on (event: 'ready', listener: () => void): unknown
  duplicate (override: { enableReadyCheck: boolean }): RedisClient
  /** ioredis's connection state: `ready` once it answers commands. */
  readonly status: string
  quit (): Promise<unknown>
  disconnect (): void
}

/** How long `close()` waits for a connection's QUIT by default, in ms. */
const DEFAULT_REDIS_CLOSE_TIMEOUT = 1000

export interface RedisBusOptions {
  /** A `redis://` URL; the bus opens its publisher and subscriber on it (with ioredis, which must be installed). Give this or `publisher`. */
  url?: string
  /** An existing ioredis connection to publish on (the bus does not close it); the subscriber is its duplicate. */
  publisher?: RedisClient
  /** Prefix of the Redis channels. Default `a2a:events:`. */
  channelPrefix?: string
  /**
   * Errors of the connections the bus opens (ioredis reconnects by itself), e.g. to log
   * them. Without it ioredis prints each as an "Unhandled error event".
   */
  onError?: (error: Error) => void
  /**
   * How long `close()` waits for each connection it opened to quit (QUIT, after the replies
   * pending), in ms; past it, or at once when the connection is not ready (Redis out of reach),
   * the connection is dropped. Default 1,000.
   */
  closeTimeout?: number
}

export type ClosableRedisBus = RedisEventBus & { close (): Promise<void> }

export function redisBus (options: RedisBusOptions): ClosableRedisBus {
  if ((options.url === undefined) === (options.publisher === undefined)) throw new InvalidOptionError('url', 'give exactly one of url and publisher')
  const { closeTimeout = DEFAULT_REDIS_CLOSE_TIMEOUT } = options
  if (!Number.isSafeInteger(closeTimeout) || closeTimeout < 0) throw new InvalidOptionError('closeTimeout', 'must be an integer >= 0')
  const publisher: RedisClient = options.publisher ??
    new (optionalRequire<{ Redis: typeof Redis }>('ioredis', 'redisBus').Redis)(options.url as string)
  // No INFO ready check on the subscriber: subscribing while it connects would race with it,
  // and Redis refuses INFO in subscriber mode (ioredis 5.8.2 and later, redis/ioredis#2037).
  const subscriber = publisher.duplicate({ enableReadyCheck: false })
  const owned = options.publisher === undefined ? [publisher, subscriber] : [subscriber]
  const { onError } = options
  if (onError !== undefined) for (const connection of owned) connection.on('error', onError)
  const bus = new RedisEventBus({ publisher, subscriber, channelPrefix: options.channelPrefix })
  return Object.assign(bus, {
    async close () {
      await Promise.all(owned.map(connection => quit(connection, closeTimeout)))
    }
  })
}

/**
 * Closes `connection` within `timeout` ms. ioredis's QUIT waits behind its offline queue, which
 * a connection not ready (Redis refusing, or a proxy accepting then dropping connections) holds
 * until its commands' retries run out, and a stalled Redis never answers it: such a connection is
 * dropped at once, and one whose QUIT did not end in time is dropped then.
 */
async function quit (connection: RedisClient, timeout: number): Promise<void> {
  if (connection.status === 'ready') {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<void>(resolve => { timer = setTimeout(resolve, timeout) })
    await Promise.race([connection.quit(), late]).catch(() => {})
    clearTimeout(timer)
  }
  connection.disconnect()
}

/** A LISTEN/NOTIFY bus on its own pool (from `connectionString`) or on a given one. */
export function postgresBus (options: PostgresEventBusOptions): PostgresEventBus {
  return new PostgresEventBus(options)
}
