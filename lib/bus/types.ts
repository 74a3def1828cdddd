// The event bus fans a task's events out to every stream that follows the task. The
// in-memory bus serves one process; other implementations carry the same events
// between instances.
import type { StreamResponse } from '../schema/wire.js'

export type BusListener = (event: StreamResponse) => void

export interface EventBus {
  /** Delivers the event to every listener of the task, in publication order. */
  publish (topic: string, event: StreamResponse): void
  /** Returns the function that removes the listener. */
  subscribe (topic: string, listener: BusListener): () => void
  /** Listeners on one topic, or on all topics when none is named. */
  listenerCount (topic?: string): number
  /**
   * Resolves once events other instances publish on `topic` reach this process's
   * listeners (a bus across instances subscribes asynchronously); absent on a local bus.
   */
  ready? (topic: string): Promise<void>
}
