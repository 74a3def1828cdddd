// What every transport offers the client: one unary call, one stream, close. The
// eleven methods go by their JSON-RPC names (spec §9); each transport maps them onto
// its binding.
import type { StreamResponse } from '../schema/wire.js'
import { InvalidResponseError } from './errors.js'

export type UnaryMethod =
  | 'SendMessage'
  | 'GetTask'
  | 'ListTasks'
  | 'CancelTask'
  | 'CreateTaskPushNotificationConfig'
  | 'GetTaskPushNotificationConfig'
  | 'ListTaskPushNotificationConfigs'
  | 'DeleteTaskPushNotificationConfig'
  | 'GetExtendedAgentCard'

export type StreamMethod = 'SendStreamingMessage' | 'SubscribeToTask'

export interface CallOptions {
  /** Aborts the call: a unary call rejects with the signal's reason, a stream throws it and ends. */
  signal?: AbortSignal
  /** Give the call up after this many ms (for a stream: until it ends) with a CallTimeoutError. */
  timeout?: number
  /**
   * Service parameters of this call only, over the transport's (names compared ignoring
   * case): request headers over HTTP, the frame's `serviceParams` on WebSocket a2a.v1
   * (which a browser can send too). Seed 000 has only the upgrade's: there they are a TypeError.
   */
  serviceParams?: Record<string, string>
}

export interface Transport {
  /** The card's `protocolBinding` of this transport. */
  readonly binding: string
  call (method: UnaryMethod, params: object, options?: CallOptions): Promise<unknown>
  /**
   * Starts the stream at once; errors, the first one included, surface from the iterator.
   * Ending the iteration early (break, return) stops the stream.
   */
  stream (method: StreamMethod, params: object, options?: CallOptions): AsyncIterableIterator<StreamResponse>
  close (): Promise<void>
}

/** Options every transport takes. */
export interface TransportOptions {
  /**
   * Service parameters (spec §3.2.6) sent as HTTP headers: `Authorization`, `A2A-Extensions`, …
   * `A2A-Version` defaults to 1.0. On WebSocket they go with the upgrade and hold for the
   * whole connection (seed 000 §2); a call's own `serviceParams` go over them.
   */
  serviceParams?: Record<string, string>
  /** Default timeout of a unary call, in ms; streams have none unless a call sets one. Default: none. */
  timeout?: number
}

export const A2A_VERSION = '1.0'

/** The service parameters with `A2A-Version` defaulted (any spelling of the name the caller used wins). */
export function withVersion (serviceParams: Record<string, string> = {}): Record<string, string> {
  const named = Object.keys(serviceParams).some(name => name.toLowerCase() === 'a2a-version')
  return named ? { ...serviceParams } : { 'A2A-Version': A2A_VERSION, ...serviceParams }
}

/** `over` on top of `base`, names compared ignoring case (they are HTTP header names). */
export function mergeServiceParams (base: Record<string, string> = {}, over: Record<string, string> = {}): Record<string, string> {
  const replaced = new Set(Object.keys(over).map(name => name.toLowerCase()))
  return { ...Object.fromEntries(Object.entries(base).filter(([name]) => !replaced.has(name.toLowerCase()))), ...over }
}

const lowercased = (params: Record<string, string> = {}) => Object.fromEntries(Object.entries(params).map(([name, value]) => [name.toLowerCase(), value]))

/**
 * The `serviceParams` of an a2a.v1 request: the call's own, lowercased as in seed 001's
 * frames, with the version the call names, else the transport's, else 1.0. The
 * transport's other parameters went with the upgrade, under these.
 */
export function requestServiceParams (transport: Record<string, string> | undefined, call: Record<string, string> | undefined): Record<string, string> {
  const own = lowercased(call)
  return { 'a2a-version': own['a2a-version'] ?? lowercased(transport)['a2a-version'] ?? A2A_VERSION, ...own }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A stream's event as read off the wire: an object holding a task or a status update (each
 * with its status), a message, or an artifact update. Anything else is an InvalidResponseError,
 * thrown where the transport reads the event rather than where it is looked into.
 */
export function streamEvent (value: unknown): StreamResponse {
  if (isObject(value) && (isObject(value.message) || isObject(value.artifactUpdate) ||
    (isObject(value.task) && isObject(value.task.status)) || (isObject(value.statusUpdate) && isObject(value.statusUpdate.status)))) {
    return value as StreamResponse
  }
  throw new InvalidResponseError(`a stream event is not a task, a message, a status update or an artifact update: ${String(JSON.stringify(value)).slice(0, 200)}`)
}

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'])

/**
 * Is this the last event a stream can carry: a message as its first event (a direct reply,
 * the message-only pattern), or a task that reached a terminal state? A message later in a
 * task's stream (an agent's on the task, which some servers send) is passed on, and the stream goes on.
 */
export function isFinalEvent (event: StreamResponse, first: boolean): boolean {
  if (event.message !== undefined) return first
  const state = event.task?.status.state ?? event.statusUpdate?.status.state
  return state !== undefined && TERMINAL.has(state)
}

/** Can a stream rightly end after this event: a final one, or a task waiting for input or credentials? */
export function canEndStream (event: StreamResponse, first: boolean): boolean {
  const state = event.task?.status.state ?? event.statusUpdate?.status.state
  return isFinalEvent(event, first) || state === 'TASK_STATE_INPUT_REQUIRED' || state === 'TASK_STATE_AUTH_REQUIRED'
}

/** The task an event is about. */
export function taskIdOf (event: StreamResponse): string | undefined {
  return event.task?.id ?? event.statusUpdate?.taskId ?? event.artifactUpdate?.taskId ?? event.message?.taskId
}
