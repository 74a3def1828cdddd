import type { StreamResponse } from '../schema/wire.js'
import type { BusCommand, BusListener, CommandHandler, EventBus } from './types.js'

export class MemoryEventBus implements EventBus {
  readonly #topics = new Map<string, Set<BusListener>>()
  /** Instances of this process (apps sharing the bus) and their command handlers. */
  readonly #instances = new Map<string, CommandHandler>()
  #count = 0

  publish (topic: string, event: StreamResponse, version?: number): void {
    const listeners = this.#topics.get(topic)
    if (listeners === undefined) return
    for (const listener of listeners) listener(event, version)
  }

  subscribe (topic: string, listener: BusListener): () => void {
    let listeners = this.#topics.get(topic)
    if (listeners === undefined) this.#topics.set(topic, listeners = new Set())
    // Wrapped so the same function can subscribe twice and be removed once per call.
    const entry: BusListener = (event, version) => listener(event, version)
    listeners.add(entry)
    this.#count++
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      this.#count--
      listeners.delete(entry)
      if (listeners.size === 0) this.#topics.delete(topic)
    }
  }

  listenerCount (topic?: string): number {
    return topic === undefined ? this.#count : (this.#topics.get(topic)?.size ?? 0)
  }

  command (instance: string, command: BusCommand): void {
    // Delivered on a later turn, as a bus across processes would.
    queueMicrotask(() => this.#instances.get(instance)?.(command))
  }

  async onCommand (instance: string, handler: CommandHandler): Promise<() => void> {
    this.#instances.set(instance, handler)
    return () => { if (this.#instances.get(instance) === handler) this.#instances.delete(instance) }
  }
}
