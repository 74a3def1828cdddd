// Trying again with exponential backoff and jitter: `reconnect` runs an operation (a
// connect, a call) again after each failure worth retrying; `resumeStream` reads a stream
// to its end across dropped connections by resubscribing to its task (SubscribeToTask,
// whose first event is the task's snapshot, seed 000 §4). Worth retrying is what a new
// attempt can get past (isReconnectable): a dropped or closed connection (1001, 1006,
// 1011, 1013…), HTTP 429 and 5xx (the 503 of a connection cap included), a timeout, an
// agent's RetryInfo. Not: a refused credential (401/403 at the upgrade or in a frame,
// close 4001), an unsupported version (4002), a subprotocol mismatch, an endpoint that is
// no WebSocket (a 200 or 404 page), an abort. Nothing here is Node-only.
import type { StreamResponse, Task } from '../schema/wire.js'
import { A2AClientError, ClientError, StreamIncompleteError, UnexpectedStatusError } from './errors.js'
import { whenAborted } from './deadline.js'
import { isFinalEvent, taskIdOf } from './transport.js'

export interface ReconnectOptions {
  /** ms to wait before the first retry; each retry waits twice as long as the one before. Default 1000. */
  initialDelay?: number
  /** The longest wait, in ms. Default 30,000. */
  maxDelay?: number
  /** Attempts in all, the first one included; `Infinity` for no end. Default 10. */
  maxAttempts?: number
  /** The share of each wait taken off at random, 0 to 1: a wait is in [delay × (1 − jitter), delay]. Default 0.5. */
  jitter?: number
  /** Stops the waiting and the retrying: what is waiting rejects with the signal's reason. */
  signal?: AbortSignal
  /** Is this failure worth another attempt? Default: isReconnectable. */
  shouldRetry?: (error: unknown) => boolean
  /** Told of each retry (1 for the first) before its wait. */
  onRetry?: (error: unknown, retry: number, delayMs: number) => void
  /** Numbers in [0, 1) for the jitter. Default Math.random. */
  random?: () => number
  /** Waits `ms`, or rejects with the signal's reason once it aborts. Default: a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export interface ResumeOptions extends ReconnectOptions {
  /**
   * Reads the task (e.g. `id => client.getTask({ id })`). A task that ended while the stream was
   * cut refuses the resubscription (-32004, spec §3.6); with this the stream then ends with the
   * task as stored, `{ task }`, instead of that refusal.
   */
  getTask?: (taskId: string) => Promise<Task>
}

type Policy = Required<Omit<ReconnectOptions, 'signal' | 'onRetry'>> & Pick<ReconnectOptions, 'signal' | 'onRetry'>

/**
 * Is the failure one that a new attempt (on a new connection) may get past? An HTTP 429 or
 * 5xx counts, a gateway's as well as the agent's own (its 503 with an error body included);
 * any other ClientError says for itself.
 */
export function isReconnectable (error: unknown): boolean {
  if (error instanceof UnexpectedStatusError) return retriedStatus(error.status)
  if (error instanceof A2AClientError && error.httpStatus !== undefined && retriedStatus(error.httpStatus)) return true
  return error instanceof ClientError && error.retryable
}

const retriedStatus = (status: number): boolean => status === 429 || status >= 500

function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason)
      return
    }
    const timer = setTimeout(() => {
      unwatch?.()
      resolve()
    }, ms)
    const unwatch = signal === undefined
      ? undefined
      : whenAborted(signal, () => {
        clearTimeout(timer)
        reject(signal.reason)
      })
  })
}

function policy (options: ReconnectOptions): Policy {
  const { initialDelay = 1000, maxDelay = 30_000, maxAttempts = 10, jitter = 0.5 } = options
  if (!(initialDelay > 0 && Number.isFinite(initialDelay))) throw new RangeError(`reconnect option initialDelay must be a positive number of ms; got ${initialDelay}`)
  if (!(maxDelay >= initialDelay && Number.isFinite(maxDelay))) throw new RangeError(`reconnect option maxDelay must be a number of ms no less than initialDelay (${initialDelay}); got ${maxDelay}`)
  if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) throw new RangeError(`reconnect option maxAttempts must be an integer of at least 1, or Infinity; got ${maxAttempts}`)
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`reconnect option jitter must be between 0 and 1; got ${jitter}`)
  return {
    initialDelay,
    maxDelay,
    maxAttempts,
    jitter,
    signal: options.signal,
    shouldRetry: options.shouldRetry ?? isReconnectable,
    onRetry: options.onRetry,
    random: options.random ?? Math.random,
    sleep: options.sleep ?? sleep
  }
}

/** The wait before retry number `retry` (1 for the first): initialDelay doubled each time up to maxDelay, less the jitter. */
export function reconnectDelay (retry: number, options: ReconnectOptions = {}): number {
  return delayOf(policy(options), retry)
}

function delayOf (policy: Policy, retry: number): number {
  const delay = Math.min(policy.maxDelay, policy.initialDelay * 2 ** (retry - 1))
  return delay - delay * policy.jitter * policy.random()
}

/** Is this the end of the retrying: the attempts used up, the signal aborted, or a failure not worth retrying? */
function givesUp (policy: Policy, error: unknown, attempt: number): boolean {
  return attempt >= policy.maxAttempts || policy.signal?.aborted === true || !policy.shouldRetry(error)
}

/** Waits before retry number `retry`, at least as long as the agent's RetryInfo asks. */
async function wait (policy: Policy, error: unknown, retry: number): Promise<void> {
  const asked = error instanceof A2AClientError ? error.retryDelayMs ?? 0 : 0
  const delay = Math.max(delayOf(policy, retry), asked)
  policy.onRetry?.(error, retry, delay)
  await policy.sleep(delay, policy.signal)
}

/**
 * Runs `operation` until it succeeds, waiting the backoff after each failure worth
 * retrying; the last failure, or one not worth retrying, is thrown as it is.
 */
export async function reconnect<T> (operation: (attempt: number) => Promise<T>, options: ReconnectOptions = {}): Promise<T> {
  const rules = policy(options)
  for (let attempt = 1; ; attempt++) {
    rules.signal?.throwIfAborted()
    try {
      return await operation(attempt)
    } catch (error) {
      if (givesUp(rules, error, attempt)) throw error
      await wait(rules, error, attempt)
    }
  }
}

/**
 * Reads `stream` to its end across cuts: after a failure worth retrying, once the stream
 * has named its task, waits the backoff and goes on with `resubscribe(taskId)` (e.g.
 * `id => client.resubscribe(id)`), from the task's snapshot; the events in between are
 * not replayed. The wait grows with each failure in a row and starts over once an event
 * arrives. A stream that fails before naming its task is thrown as it is: sending its
 * message again could start a second task. With `options.getTask`, a task that ended during
 * a cut ends the stream as stored (`{ task }`) rather than with the resubscription's refusal.
 */
export async function * resumeStream (
  stream: AsyncIterable<StreamResponse>,
  resubscribe: (taskId: string) => AsyncIterable<StreamResponse>,
  options: ResumeOptions = {}
): AsyncGenerator<StreamResponse, void, undefined> {
  const rules = policy(options)
  let events = stream
  let taskId: string | undefined
  let failures = 0
  for (;;) {
    try {
      for await (const event of events) {
        taskId ??= taskIdOf(event)
        failures = 0
        yield event
      }
      return
    } catch (error) {
      taskId ??= error instanceof StreamIncompleteError ? error.taskId : undefined
      if (events !== stream && taskId !== undefined && options.getTask !== undefined && error instanceof A2AClientError && error.code === -32004) {
        // The resubscription refused: if the task ended in the gap, its end is the stream's.
        const task = await options.getTask(taskId)
        if (isFinalEvent({ task }, true)) {
          yield { task }
          return
        }
      }
      failures++
      if (taskId === undefined || givesUp(rules, error, failures)) throw error
      await wait(rules, error, failures)
      events = resubscribe(taskId)
    }
  }
}
