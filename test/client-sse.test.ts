// The client's event-stream parser (lib/client/sse.ts) on bodies cut at awkward places.
import t from 'tap'
import { readSse, type SseEvent } from '../lib/client/sse.js'

function body (chunks: Array<string | Uint8Array>, onCancel?: () => void): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream({
    start (controller) {
      for (const chunk of chunks) controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk)
      if (onCancel === undefined) controller.close()
    },
    cancel: onCancel
  })
}

async function read (chunks: Array<string | Uint8Array>): Promise<SseEvent[]> {
  const events: SseEvent[] = []
  for await (const event of readSse(body(chunks))) events.push(event)
  return events
}

t.test('events end at a blank line; `event` names them, `message` by default', async t => {
  t.same(await read(['data: {"a":1}\n\nevent: error\ndata: {"b":2}\n\n']), [
    { event: 'message', data: '{"a":1}' },
    { event: 'error', data: '{"b":2}' }
  ])
})

t.test('data lines join with a newline; comments, id, retry and unknown fields are skipped; one leading space is dropped', async t => {
  t.same(await read([': keep-alive\nid: 7\nretry: 10\ndata:one\ndata:  two\nwhatever: x\ndata\n\n']), [{ event: 'message', data: 'one\n two\n' }])
})

t.test('CRLF, CR and LF line ends, split anywhere between chunks', async t => {
  const expected = [{ event: 'message', data: 'a' }, { event: 'message', data: 'b' }, { event: 'message', data: 'c' }]
  t.same(await read(['data: a\r\n\r\ndata: b\r\rdata: c\n\n']), expected)
  t.same(await read(['data: a\r', '\n\r', '\ndata: b\r', '\rdata: c\n', '\n']), expected)
  t.same(await read(['da', 'ta: a\n', '\n', 'data: b\n\nd', 'ata: c', '\n\n']), expected)
})

t.test('a multi-byte character split between chunks', async t => {
  const bytes = new TextEncoder().encode('data: café\n\n')
  const cut = bytes.indexOf(0xc3) + 1
  t.same(await read([bytes.slice(0, cut), bytes.slice(cut)]), [{ event: 'message', data: 'café' }])
})

t.test('an event without its blank line (a cut body) or without data is not dispatched', async t => {
  t.same(await read(['event: x\n\ndata: done\n\ndata: half']), [{ event: 'message', data: 'done' }])
  t.same(await read(['data: last\r']), [], 'a CR at the very end only ends the line')
})

t.test('a reader that stops early cancels the body', async t => {
  let canceled = false
  const events = readSse(body(['data: 1\n\ndata: 2\n\n'], () => { canceled = true }))
  t.same((await events.next()).value, { event: 'message', data: '1' })
  await events.return(undefined)
  t.equal(canceled, true)
})

t.test('a read of many lines is scanned for line ends once, not once a line', async t => {
  // 2,000 events in one read: the characters every search for a CR goes over, counted.
  const chunk = Array.from({ length: 2000 }, (_, i) => `data: ${String(i).padStart(90, '0')}\n\n`).join('')
  const indexOf = String.prototype.indexOf
  let scanned = 0
  String.prototype.indexOf = function (this: string, search: string, position?: number) {
    const found = indexOf.call(this, search, position)
    if (search === '\r') scanned += (found === -1 ? this.length : found + 1) - (position ?? 0)
    return found
  }
  let events: SseEvent[]
  try {
    events = await read([chunk])
  } finally {
    String.prototype.indexOf = indexOf
  }
  t.equal(events.length, 2000)
  t.equal(events[1999]?.data, String(1999).padStart(90, '0'))
  t.ok(scanned <= chunk.length, `${scanned} characters scanned for a CR in a read of ${chunk.length}`)
})
