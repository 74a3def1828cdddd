import type { StreamResponse } from '../schema/wire.js'
import type { BusListener, EventBus } from './types.js'

export class MemoryEventBus implements EventBus {
  readonly #topics = new Map<string, Set<BusListener>>()
  #count = 0

  publish (topic: string, event: StreamResponse): void {
    const listeners = this.#topics.get(topic)
    if (listeners === undefined) return
    for (const listener of listeners) listener(event)
  }

  subscribe (topic: string, listener: BusListener): () => void {
    let listeners = this.#topics.get(topic)
    if (listeners === undefined) this.#topics.set(topic, listeners = new Set())
    // Wrapped so the same function can subscribe twice and be removed once per call.
    const entry: BusListener = (event) => listener(event)
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
}
