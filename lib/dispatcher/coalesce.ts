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
 * `internalError` is the binding's body, of media type `contentType`, for an answer whose
 * head Node refused to write.
 */
export function coalesceReplies (fastify: FastifyInstance, internalError: string, contentType: string): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    atEndOfTurn(() => {
      try {
        done(null, payload)
      } catch (error) {
        // Fastify writes the head in `done`: a header value Node refuses throws here, out of
        // the request's own call stack, where nothing else would catch it.
        request.log.error({ err: error }, 'A2A answer not written')
        if (reply.raw.headersSent) reply.raw.destroy()
        else reply.raw.writeHead(500, { 'content-type': `${contentType}; charset=utf-8` }).end(internalError)
      }
    })
  })
}
