// One signal per call that fires on the caller's abort or on the call's timeout, so each
// transport has a single thing to watch. Its reason is the caller's own (an abort) or a
// CallTimeoutError.
import { CallTimeoutError } from './errors.js'
import type { CallOptions } from './transport.js'

export interface Deadline {
  readonly signal: AbortSignal
  /** Fires the signal now, with `reason` (a reader that stopped early). */
  abort (reason: unknown): void
  /** Stops the timer and the listener on the caller's signal. */
  dispose (): void
}

const MAX_TIMER = 2 ** 31 - 1

export function deadline (options: CallOptions, defaultTimeout?: number): Deadline {
  const controller = new AbortController()
  const { signal } = options
  const timeout = options.timeout ?? defaultTimeout
  const onAbort = () => controller.abort(signal?.reason)
  if (signal?.aborted === true) onAbort()
  else signal?.addEventListener('abort', onAbort, { once: true })
  // A timer longer than setTimeout's most (2³¹ − 1 ms) would fire at once: such a timeout (Infinity) is none.
  const timer = timeout === undefined || timeout > MAX_TIMER ? undefined : setTimeout(() => controller.abort(new CallTimeoutError(timeout)), timeout)
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    dispose () {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
  }
}
