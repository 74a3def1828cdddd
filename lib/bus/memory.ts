import type { StreamResponse } from '../schema/wire.js'
import { SteadyMap } from '../steady-map.js'
import type { BusCommand, BusListener, CommandHandler, EventBus } from './types.js'

export class MemoryEventBus implements EventBus {
  /**
   * Each topic's listeners, copied on every change: a publish goes on over the array it
   * started with whatever its listeners subscribe or unsubscribe meanwhile. An array, not a
   * Set: a topic mostly has one listener, for one turn, and a Set's table would be made and
   * dropped with it. A SteadyMap: topics come and go with the calls.
   */
  readonly #topics = new SteadyMap<string, BusListener[]>()
  /** Instances of this process (apps sharing the bus) and their command handlers. */
  readonly #instances = new Map<string, CommandHandler>()
  #count = 0

  publish (topic: string, event: StreamResponse, version?: number): void {
    const listeners = this.#topics.get(topic)
    if (listeners === undefined) return
    for (let index = 0; index < listeners.length; index++) (listeners[index] as BusListener)(event, version)
  }

  subscribe (topic: string, listener: BusListener): () => void {
    const listeners = this.#topics.get(topic)
    this.#topics.set(topic, listeners === undefined ? [listener] : [...listeners, listener])
    this.#count++
    let subscribed = true
    // The same function may subscribe twice: each call removes one of its places.
    return () => {
      if (!subscribed) return
      subscribed = false
      this.#count--
      const current = this.#topics.get(topic) as BusListener[]
      if (current.length === 1) {
        this.#topics.delete(topic)
        // Emptied, though no publish reads it again (a publish under way has called its only
        // listener): tables the Map dropped while rehashing may still point at the array, and
        // the listener (the call that subscribed) is then not kept alive through them.
        current.length = 0
        return
      }
      const index = current.indexOf(listener)
      this.#topics.set(topic, current.filter((_, at) => at !== index))
    }
  }

  listenerCount (topic?: string): number {
    return topic === undefined ? this.#count : (this.#topics.get(topic)?.length ?? 0)
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
