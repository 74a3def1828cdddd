// Coalesced HTTP answers. Node runs the callbacks of every socket found readable in one turn
// of the event loop before its check phase. Written from inside those callbacks, each answer
// goes out between two reads: under load the process alternates between its own code and the
// kernel's network path, and every write wakes the peer on its own. Held until the check
// phase, the answers of the requests read together are written together.
import type { FastifyInstance } from 'fastify'

/** The callbacks held in this turn, in order; undefined when none is (no immediate set). */
let held: Array<() => void> | undefined

function releaseHeld (): void {
  const releasing = held as Array<() => void>
  held = undefined
  for (const release of releasing) {
    // One that throws does not hold back the answers after it; its error is then uncaught, as it was.
    try {
      release()
    } catch (error) {
      queueMicrotask(() => { throw error })
    }
  }
}

/** Calls `release` in this turn's check phase (one setImmediate for every callback of the turn, in order), after its I/O callbacks. */
export function atEndOfTurn (release: () => void): void {
  if (held === undefined) {
    held = []
    setImmediate(releaseHeld)
  }
  held.push(release)
}

/**
 * Every answer of this (encapsulated) binding waits for the end of the turn; a hijacked SSE
 * response does not pass here. A callback hook, not an async one: no promise per answer.
 */
export function coalesceReplies (fastify: FastifyInstance): void {
  fastify.addHook('onSend', (_request, _reply, payload, done) => {
    atEndOfTurn(() => { done(null, payload) })
  })
}
