// One signal per call that fires on the caller's abort or on the call's timeout, so each
// transport has a single thing to watch. Its reason is the caller's own (an abort) or a
// CallTimeoutError.
import { CallTimeoutError } from './errors.js'
import { MAX_TIMER, timeoutOption } from './options.js'
import type { CallOptions } from './transport.js'

export interface Deadline {
  readonly signal: AbortSignal
  /** Fires the signal now, with `reason` (a reader that stopped early). */
  abort (reason: unknown): void
  /** Stops the timer and the listener on the caller's signal. */
  dispose (): void
}

interface AbortWatch {
  readonly listener: () => void
  readonly callbacks: Set<() => void>
}

// One 'abort' listener per caller signal however many calls share it: past ten listeners
// on one signal Node prints a MaxListenersExceededWarning, a false alarm for a signal that
// stops a batch of calls.
const watches = new WeakMap<AbortSignal, AbortWatch>()

/** Runs `callback` once when `signal` aborts (at once if it has); the returned function stops watching. */
export function whenAborted (signal: AbortSignal, callback: () => void): () => void {
  if (signal.aborted) {
    callback()
    return () => {}
  }
  let watch = watches.get(signal)
  if (watch === undefined) {
    const callbacks = new Set<() => void>()
    const listener = () => {
      watches.delete(signal)
      for (const each of callbacks) each()
    }
    watch = { listener, callbacks }
    watches.set(signal, watch)
    signal.addEventListener('abort', listener, { once: true })
  }
  const { callbacks, listener } = watch
  callbacks.add(callback)
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0) return
    watches.delete(signal)
    signal.removeEventListener('abort', listener)
  }
}

export function deadline (options: CallOptions, defaultTimeout?: number): Deadline {
  const timeout = timeoutOption('timeout', options.timeout) ?? defaultTimeout
  const controller = new AbortController()
  const { signal } = options
  const unwatch = signal === undefined ? undefined : whenAborted(signal, () => controller.abort(signal.reason))
  // A timer longer than setTimeout's most (2³¹ − 1 ms) would fire at once: such a timeout (Infinity) is none.
  const timer = timeout === undefined || timeout > MAX_TIMER ? undefined : setTimeout(() => controller.abort(new CallTimeoutError(timeout)), timeout)
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    dispose () {
      clearTimeout(timer)
      unwatch?.()
    }
  }
}
