// Coalesced HTTP answers. Node runs the callbacks of every socket found readable in one turn
// of the event loop before its check phase. Written from inside those callbacks, each answer
// goes out between two reads: under load the process alternates between its own code and the
// kernel's network path, and every write wakes the peer on its own. Held until the check
// phase, the answers of the requests read together are written together.
import type { FastifyInstance } from 'fastify'

let turnEnd: Promise<void> | undefined

/** Settles in this turn's check phase (setImmediate), after its I/O callbacks: one promise for every caller in the turn. */
export function endOfTurn (): Promise<void> {
  turnEnd ??= new Promise(resolve => {
    setImmediate(() => {
      turnEnd = undefined
      resolve()
    })
  })
  return turnEnd
}

/** Every answer of this (encapsulated) binding waits for the end of the turn; a hijacked SSE response does not pass here. */
export function coalesceReplies (fastify: FastifyInstance): void {
  fastify.addHook('onSend', async (_request, _reply, payload) => {
    await endOfTurn()
    return payload
  })
}
