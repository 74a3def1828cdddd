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
