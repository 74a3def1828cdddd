// The event bus fans a task's events out to every stream that follows the task. The
// in-memory bus serves one process; other implementations carry the same events
// between instances.
import type { StreamResponse } from '../schema/wire.js'

/**
 * `version` is the task's version (TaskStore) once the change that made the event was
 * stored; an event that changed no task (a direct reply) has none.
 */
export type BusListener = (event: StreamResponse, version?: number) => void

/**
 * A command to one instance of a cluster (lib/cluster): `cancel` asks the instance running
 * the task's executor to cancel it, as CancelTask would there.
 */
export interface BusCommand {
  type: 'cancel'
  tenant: string
  taskId: string
  /** The CancelTask request's `metadata`, for the owner's `cancel` hook. */
  metadata?: Record<string, unknown>
}

export type CommandHandler = (command: BusCommand) => void

export interface EventBus {
  /** Delivers the event, with its version, to every listener of the task, in publication order. */
  publish (topic: string, event: StreamResponse, version?: number): void
  /** Returns the function that removes the listener. */
  subscribe (topic: string, listener: BusListener): () => void
  /** Listeners on one topic, or on all topics when none is named. */
  listenerCount (topic?: string): number
  /**
   * Resolves once events other instances publish on `topic` reach this process's
   * listeners (a bus across instances subscribes asynchronously); absent on a local bus.
   */
  ready? (topic: string): Promise<void>
  /**
   * Calls `listener` each time the bus has subscribed again, after it lost its connection
   * (a bus across instances): the events other instances published meanwhile did not reach
   * this process, and a stream of their task reads it again (README, *Several instances*).
   * Called once the topics followed then are subscribed again. Returns the function that
   * removes the listener. Absent on a bus that never loses an event (the in-memory bus).
   */
  onResubscribe? (listener: () => void): () => void
  /**
   * Sends `command` to the instance named `instance` (a cluster instance id), once, at most
   * once (a lost command is resent by the sender). Needed by the `cluster` option.
   */
  command? (instance: string, command: BusCommand): void
  /**
   * Receives the commands sent to `instance`, one handler per instance; resolves, once
   * commands reach it, with the function that stops receiving. Needed by the `cluster` option.
   */
  onCommand? (instance: string, handler: CommandHandler): Promise<() => void>
  /** Ends what the bus opened; the plugin calls it when Fastify closes, after the streams ended. */
  close? (): Promise<void>
}
