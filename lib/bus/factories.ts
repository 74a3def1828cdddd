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
  quit (): Promise<unknown>
  disconnect (): void
}

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
}

export type ClosableRedisBus = RedisEventBus & { close (): Promise<void> }

export function redisBus (options: RedisBusOptions): ClosableRedisBus {
  if ((options.url === undefined) === (options.publisher === undefined)) throw new InvalidOptionError('url', 'give exactly one of url and publisher')
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
      await Promise.all(owned.map(connection => connection.quit().catch(() => connection.disconnect())))
    }
  })
}

/** A LISTEN/NOTIFY bus on its own pool (from `connectionString`) or on a given one. */
export function postgresBus (options: PostgresEventBusOptions): PostgresEventBus {
  return new PostgresEventBus(options)
}
