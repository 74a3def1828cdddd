import type { StreamResponse } from '../schema/wire.js'
import { SteadyMap } from '../steady-map.js'
import type { BusCommand, BusListener, CommandHandler, EventBus } from './types.js'

export class MemoryEventBus implements EventBus {
  /**
   * Each topic's listeners, changed in place: a publish goes on over the ones it started with
   * whatever its listeners subscribe or unsubscribe meanwhile, as it stops at the length it
   * started with and a removal from an array a publish is going over replaces the array. An
   * array, not a Set: a topic mostly has one listener, for one turn, and a Set's table would
   * be made and dropped with it. A SteadyMap: topics come and go with the calls.
   */
  readonly #topics = new SteadyMap<string, BusListener[]>()
  /** The arrays the publishes under way go over, innermost last (a listener may publish). */
  readonly #publishing: BusListener[][] = []
  /** Instances of this process (apps sharing the bus) and their command handlers. */
  readonly #instances = new Map<string, CommandHandler>()
  #count = 0

  publish (topic: string, event: StreamResponse, version?: number): void {
    const listeners = this.#topics.get(topic)
    if (listeners === undefined) return
    // One listener, the common case: once it is called nothing reads the array again.
    if (listeners.length === 1) {
      (listeners[0] as BusListener)(event, version)
      return
    }
    this.#publishing.push(listeners)
    try {
      for (let index = 0, end = listeners.length; index < end; index++) (listeners[index] as BusListener)(event, version)
    } finally {
      this.#publishing.pop()
    }
  }

  subscribe (topic: string, listener: BusListener): () => void {
    const listeners = this.#topics.get(topic)
    if (listeners === undefined) this.#topics.set(topic, [listener])
    else listeners.push(listener)
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
      // Copied once for the publishes under way; the copy is changed in place after.
      if (this.#publishing.includes(current)) this.#topics.set(topic, current.filter((_, at) => at !== index))
      else current.splice(index, 1)
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
