// Server-sent events (the WHATWG event-stream format) read from a fetch body, for both
// HTTP bindings. Only `event` and `data` matter to A2A; comments, `id` and `retry` are
// skipped. An event is dispatched at its blank line, so a body cut mid-event yields none.

export interface SseEvent {
  /** The `event:` field; `message` when there is none. */
  event: string
  /** The `data:` lines joined with "\n". */
  data: string
}

export async function * readSse (body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let event = ''
  let data: string[] = []
  try {
    for (;;) {
      const { value, done } = await reader.read()
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true })
      for (;;) {
        const end = lineEnd(buffer, done)
        if (end === undefined) break
        const line = buffer.slice(0, end.index)
        buffer = buffer.slice(end.index + end.length)
        if (line === '') {
          if (data.length > 0) yield { event: event === '' ? 'message' : event, data: data.join('\n') }
          event = ''
          data = []
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon === -1 ? line : line.slice(0, colon)
        let value = colon === -1 ? '' : line.slice(colon + 1)
        if (value.startsWith(' ')) value = value.slice(1)
        if (field === 'event') event = value
        else if (field === 'data') data.push(value)
      }
      if (done) return
    }
  } finally {
    // The reader stopping early (or failing) releases the body and with it the connection.
    await reader.cancel().catch(() => {})
  }
}

/** The first line terminator (CRLF, LF or CR) in `buffer`; a CR at its very end may be half a CRLF, so it waits unless the body is done. */
function lineEnd (buffer: string, done: boolean): { index: number, length: number } | undefined {
  const lf = buffer.indexOf('\n')
  // A CR is looked for only up to the LF: a read of many lines is then scanned once, not once a line.
  const cr = (lf === -1 ? buffer : buffer.substring(0, lf)).indexOf('\r')
  if (cr !== -1 && (lf === -1 || cr < lf)) {
    if (cr + 1 < buffer.length) return { index: cr, length: buffer[cr + 1] === '\n' ? 2 : 1 }
    return done ? { index: cr, length: 1 } : undefined
  }
  return lf === -1 ? undefined : { index: lf, length: 1 }
}
