// Server-sent events (the WHATWG event-stream format) read from a fetch body, for both
// HTTP bindings. Only `event` and `data` matter to A2A; comments, `id` and `retry` are
// skipped. An event is dispatched at its blank line, so a body cut mid-event yields none.
//
// Each read is searched for line ends once, and a line that spans reads is kept as the
// pieces it came in, joined once when it ends: one large event (a task snapshot grows with
// its task) costs time in proportion to its size, whatever the reads it comes in.
import { InvalidResponseError } from './errors.js'
import { limitOption } from './options.js'

export interface SseEvent {
  /** The `event:` field; `message` when there is none. */
  event: string
  /** The `data:` lines joined with "\n". */
  data: string
}

export interface SseOptions {
  /** The largest event, in characters of its lines (line ends not counted). Default DEFAULT_MAX_EVENT_SIZE. */
  maxEventSize?: number
}

/** 64 Mi characters: 16 times the server's largest request body (`bodyLimit`, 4 MiB). */
export const DEFAULT_MAX_EVENT_SIZE = 64 * 1024 * 1024

/** The option `maxEventSize` checked: a positive integer, or Infinity for no limit; the default when unset. */
export function maxEventSizeOption (value: number | undefined): number {
  return limitOption('maxEventSize', value, DEFAULT_MAX_EVENT_SIZE)
}

const LF = 10

export async function * readSse (body: ReadableStream<Uint8Array>, options: SseOptions = {}): AsyncGenerator<SseEvent> {
  const maxEventSize = maxEventSizeOption(options.maxEventSize)
  const reader = body.getReader()
  const decoder = new TextDecoder()
  // The line not ended yet, as the pieces of the reads it came in.
  let pending: string[] = []
  let pendingLength = 0
  // The last read ended with a CR: an LF at the start of the next one is the rest of its CRLF.
  let afterCr = false
  // The characters of the event's lines read so far, the one not ended yet included.
  let size = 0
  let event = ''
  let data: string[] = []
  const tooLarge = () => new InvalidResponseError(`an event of the stream is larger than maxEventSize, ${maxEventSize} characters`)
  try {
    for (;;) {
      const { value, done } = await reader.read()
      const text = done ? decoder.decode() : decoder.decode(value, { stream: true })
      let start = 0
      if (afterCr && text.length > 0) {
        if (text.charCodeAt(0) === LF) start = 1
        afterCr = false
      }
      // The next CR and LF at or after `start` (-1: none left in this read), each searched for
      // again only once `start` has passed it: the read is scanned once for each.
      let cr = -2
      let lf = -2
      for (;;) {
        if (cr !== -1 && cr < start) cr = text.indexOf('\r', start)
        if (lf !== -1 && lf < start) lf = text.indexOf('\n', start)
        const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf)
        if (end === -1) break
        let line = text.slice(start, end)
        if (pending.length > 0) {
          pending.push(line)
          line = pending.join('')
          pending = []
          pendingLength = 0
        }
        start = end + 1
        if (end === cr) {
          // A CR ends the line at once; the LF of a CRLF is skipped, in this read or at the start of the next.
          if (start === text.length) afterCr = true
          else if (text.charCodeAt(start) === LF) start++
        }
        if (line === '') {
          if (data.length > 0) yield { event: event === '' ? 'message' : event, data: data.join('\n') }
          event = ''
          data = []
          size = 0
          continue
        }
        size += line.length
        if (size > maxEventSize) throw tooLarge()
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon === -1 ? line : line.slice(0, colon)
        let value = colon === -1 ? '' : line.slice(colon + 1)
        if (value.startsWith(' ')) value = value.slice(1)
        if (field === 'event') event = value
        else if (field === 'data') data.push(value)
      }
      if (done) return
      if (start < text.length) {
        pendingLength += text.length - start
        // A line that never ends (a peer or proxy that never sends one) fails here, not when memory runs out.
        if (size + pendingLength > maxEventSize) throw tooLarge()
        pending.push(start === 0 ? text : text.slice(start))
      }
    }
  } finally {
    // The reader stopping early (or failing) releases the body and with it the connection.
    await reader.cancel().catch(() => {})
  }
}
