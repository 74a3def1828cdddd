// The Timeout objects alive, unref'd ones included (process.getActiveResourcesInfo() leaves
// those out). A cleared timer's destroy hook runs on a later turn.
import { createHook } from 'node:async_hooks'
import type { Test } from 'tap'

/** The ids of the Timeouts made from now on and not yet destroyed (those `which` picks), until `t` ends. */
export function liveTimeouts (t: Test, which: (timeout: { _idleTimeout?: number }) => boolean = () => true): Set<number> {
  const live = new Set<number>()
  const hook = createHook({
    init (asyncId, type, _trigger, resource) { if (type === 'Timeout' && which(resource as { _idleTimeout?: number })) live.add(asyncId) },
    destroy (asyncId) { live.delete(asyncId) }
  }).enable()
  t.teardown(() => { hook.disable() })
  return live
}

/** A Timeout as it was made and went: its delay, whether its callback ran, whether it is gone (run or cleared). */
export interface TimeoutSeen {
  readonly delay: number
  fired: boolean
  ended: boolean
}

/**
 * The Timeouts made from now on, until `t` ends, by code in a file whose path holds `file`
 * (a frame of the stack that made each), in the order they were made: what a wait was set to
 * and whether it ran out, read without measuring time.
 */
export function timeoutsMadeIn (t: Test, file: string): TimeoutSeen[] {
  const made: TimeoutSeen[] = []
  const pending = new Map<number, TimeoutSeen>()
  const hook = createHook({
    init (asyncId, type, _trigger, resource) {
      if (type !== 'Timeout') return
      const limit = Error.stackTraceLimit
      Error.stackTraceLimit = 30
      const where: { stack?: string } = {}
      Error.captureStackTrace(where)
      Error.stackTraceLimit = limit
      if (where.stack?.includes(file) !== true) return
      const timeout: TimeoutSeen = { delay: (resource as { _idleTimeout: number })._idleTimeout, fired: false, ended: false }
      made.push(timeout)
      pending.set(asyncId, timeout)
    },
    before (asyncId) {
      const timeout = pending.get(asyncId)
      if (timeout !== undefined) timeout.fired = true
    },
    destroy (asyncId) {
      const timeout = pending.get(asyncId)
      if (timeout === undefined) return
      timeout.ended = true
      pending.delete(asyncId)
    }
  }).enable()
  t.teardown(() => { hook.disable() })
  return made
}
