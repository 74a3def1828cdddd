// An event bus across instances on Redis pub/sub (ioredis). Listeners of this process
// are served synchronously, exactly as by the in-memory bus, so the handler's ordering
// guarantees hold locally; every event is also published on Redis, and events another
// instance published reach the local listeners of their topic in publication order.
import { randomUUID } from 'node:crypto'
import type { StreamResponse } from '../schema/wire.js'
import { deliverCommand } from './commands.js'
import { MemoryEventBus } from './memory.js'
import type { BusCommand, BusListener, CommandHandler, EventBus } from './types.js'

/**
 * A Redis connection as the bus uses it: an ioredis `Redis` (ioredis 5) is one. Described by
 * its shape, not as ioredis's class, so that the declarations of fastify-a2a type-check for
 * a consumer without ioredis (an optional peer dependency) and without `skipLibCheck`.
 */
export interface RedisConnection {
  publish (channel: string, message: string): Promise<unknown>
  subscribe (channel: string): Promise<unknown>
  unsubscribe (channel: string): Promise<unknown>
  on (event: 'message', listener: (channel: string, message: string) => void): unknown
  /** At each (re)connection (ioredis); a connection that never emits it is never caught up with after a loss. */
  on (event: 'ready', listener: () => void): unknown
}

export interface RedisEventBusOptions {
  /** The connection events are published on (an ioredis `Redis`). */
  publisher: RedisConnection
  /** A connection in subscriber mode (e.g. `publisher.duplicate()`); the bus owns its subscriptions. */
  subscriber: RedisConnection
  /** Prefix of the Redis channels. Default `a2a:events:`. A task's events go on `<prefix><topic>` (lib/bus/topic.ts), an instance's commands on `<prefix>command<NUL><instance id>`. */
  channelPrefix?: string
}

/** A message on a topic's channel: the sending instance, the event and its version. */
type Envelope = [sender: string, event: StreamResponse, version: number | null]

export class RedisEventBus implements EventBus {
  readonly #local = new MemoryEventBus()
  readonly #publisher: RedisConnection
  readonly #subscriber: RedisConnection
  readonly #prefix: string
  /** Marks this instance's own messages, which its listeners already had. */
  readonly #instance = randomUUID()
  /** Channels subscribed on Redis, with the promise of the subscription being active. */
  readonly #channels = new Map<string, Promise<unknown>>()
  /** Command channels of the instances served here, with their handlers. */
  readonly #commands = new Map<string, CommandHandler>()
  /** Called once the channels are subscribed again after the subscriber reconnected (onResubscribe). */
  readonly #resubscribed = new Set<() => void>()

  constructor (options: RedisEventBusOptions) {
    this.#publisher = options.publisher
    this.#subscriber = options.subscriber
    this.#prefix = options.channelPrefix ?? 'a2a:events:'
    this.#subscriber.on('message', (channel: string, message: string) => {
      const onCommand = this.#commands.get(channel)
      if (onCommand !== undefined) return deliverCommand(onCommand, message)
      if (!channel.startsWith(this.#prefix)) return
      let sender: unknown, event: StreamResponse, version: number | null
      try {
        [sender, event, version] = JSON.parse(message) as Envelope
      } catch {
        return
      }
      if (sender !== this.#instance) this.#local.publish(channel.slice(this.#prefix.length), event, version ?? undefined)
    })
    // ioredis emits `ready` at each (re)connection, and subscribes again to the channels it had
    // (autoResubscribe); what was published while it was away is lost. The bus subscribes to the
    // topics' channels itself, so that ready() waits for it, and tells its listeners once done.
    this.#subscriber.on('ready', () => {
      const subscribed: Array<Promise<unknown>> = []
      for (const channel of this.#channels.keys()) {
        const subscribing = this.#subscriber.subscribe(channel).catch(() => {})
        this.#channels.set(channel, subscribing)
        subscribed.push(subscribing)
      }
      void Promise.all(subscribed).then(() => { for (const listener of this.#resubscribed) listener() })
    })
  }

  publish (topic: string, event: StreamResponse, version?: number): void {
    this.#local.publish(topic, event, version)
    this.#publisher.publish(this.#prefix + topic, JSON.stringify([this.#instance, event, version ?? null] satisfies Envelope)).catch(() => {})
  }

  subscribe (topic: string, listener: BusListener): () => void {
    const unsubscribe = this.#local.subscribe(topic, listener)
    const channel = this.#prefix + topic
    if (!this.#channels.has(channel)) this.#channels.set(channel, this.#subscriber.subscribe(channel).catch(() => {}))
    return () => {
      unsubscribe()
      if (this.#local.listenerCount(topic) > 0) return
      this.#channels.delete(channel)
      this.#subscriber.unsubscribe(channel).catch(() => {})
    }
  }

  /** Resolves once events other instances publish on `topic` reach this one's listeners. */
  async ready (topic: string): Promise<void> {
    await this.#channels.get(this.#prefix + topic)
  }

  listenerCount (topic?: string): number {
    return this.#local.listenerCount(topic)
  }

  /** Calls `listener` once the topics' channels are subscribed again after the subscriber reconnected. */
  onResubscribe (listener: () => void): () => void {
    this.#resubscribed.add(listener)
    return () => this.#resubscribed.delete(listener)
  }

  command (instance: string, command: BusCommand): void {
    this.#publisher.publish(this.#commandChannel(instance), JSON.stringify(command)).catch(() => {})
  }

  async onCommand (instance: string, handler: CommandHandler): Promise<() => void> {
    const channel = this.#commandChannel(instance)
    this.#commands.set(channel, handler)
    await this.#subscriber.subscribe(channel)
    return () => {
      if (this.#commands.get(channel) !== handler) return
      this.#commands.delete(channel)
      this.#subscriber.unsubscribe(channel).catch(() => {})
    }
  }

  /** No topic's: a topic holds no NUL, or starts with a digit. */
  #commandChannel (instance: string): string {
    return `${this.#prefix}command\u0000${instance}`
  }
}
