// The client's event-stream parser (lib/client/sse.ts) on bodies cut at awkward places,
// the work it does on an event spread over many reads, and its limit on one event's size.
import t from 'tap'
import { InvalidResponseError, JsonRpcTransport, RestTransport, createTransport } from '../lib/client/index.js'
import { DEFAULT_MAX_EVENT_SIZE, readSse, type SseEvent, type SseOptions } from '../lib/client/sse.js'

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

async function read (chunks: Array<string | Uint8Array>, options?: SseOptions): Promise<SseEvent[]> {
  const events: SseEvent[] = []
  for await (const event of readSse(body(chunks), options)) events.push(event)
  return events
}

/** A body whose n-th read (from 1) gets `chunk(n)`, `null` ending it; nothing is read ahead of the reader. */
function pulled (chunk: (read: number) => string | Uint8Array | null, onCancel?: () => void): { body: ReadableStream<Uint8Array>, reads: () => number } {
  const encoder = new TextEncoder()
  let reads = 0
  const stream = new ReadableStream<Uint8Array>({
    pull (controller) {
      const next = chunk(++reads)
      if (next === null) controller.close()
      else controller.enqueue(typeof next === 'string' ? encoder.encode(next) : next)
    },
    cancel: onCancel
  }, { highWaterMark: 0 })
  return { body: stream, reads: () => reads }
}

/** `run`'s result and the characters its searches for a CR and for an LF went over. */
async function countingScans<T> (run: () => Promise<T>): Promise<{ result: T, cr: number, lf: number }> {
  const indexOf = String.prototype.indexOf
  const scanned = { '\r': 0, '\n': 0 }
  String.prototype.indexOf = function (this: string, search: string, position?: number) {
    const found = indexOf.call(this, search, position)
    if (search === '\r' || search === '\n') scanned[search] += (found === -1 ? this.length : found + 1) - (position ?? 0)
    return found
  }
  try {
    const result = await run()
    return { result, cr: scanned['\r'], lf: scanned['\n'] }
  } finally {
    String.prototype.indexOf = indexOf
  }
}

/** Each byte of `text` as a read of its own. */
const bytewise = (text: string) => Array.from(new TextEncoder().encode(text), byte => Uint8Array.of(byte))

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
  const { result: events, cr: scanned } = await countingScans(() => read([chunk]))
  t.equal(events.length, 2000)
  t.equal(events[1999]?.data, String(1999).padStart(90, '0'))
  t.ok(scanned <= chunk.length, `${scanned} characters scanned for a CR in a read of ${chunk.length}`)
})

t.test('an event spread over many reads is scanned for line ends once, not once a read', async t => {
  // 4 Ki characters, one, two, three and four bytes long, each byte a read of its own.
  const data = 'aé€😀'.repeat(1024)
  const text = `data: ${data}\n\n`
  const { result: events, cr, lf } = await countingScans(() => read(bytewise(text)))
  t.same(events, [{ event: 'message', data }])
  t.ok(cr <= text.length, `${cr} characters scanned for a CR in ${text.length}`)
  t.ok(lf <= text.length, `${lf} characters scanned for an LF in ${text.length}`)
})

t.test('every line end, comments and fields, and characters of every length, a byte a read', async t => {
  const text = ': hello\r\nevent: één\r\ndata: €1\rdata:😀\n\r\nid: 1\nretry: 5\ndata\r\r: bye\n\ndata: x\r\n\r\n'
  const expected = [{ event: 'één', data: '€1\n😀' }, { event: 'message', data: '' }, { event: 'message', data: 'x' }]
  t.same(await read([text]), expected, 'in one read')
  t.same(await read(bytewise(text)), expected, 'a byte a read: every CRLF split between two reads, every character between several')
  t.same(await read(['data: a\r', '', '\n', '\r', '\ndata: b\r', '\r']), [{ event: 'message', data: 'a' }, { event: 'message', data: 'b' }],
    'an empty read between the CR and the LF of a CRLF')
})

t.test('an event ended by a CR at the end of a read is dispatched without waiting for the next read', async t => {
  // The next read may be long in coming: a stream waiting for input, or for its next keep-alive.
  const { body: stream, reads } = pulled(read => read === 1 ? 'data: a\r\r' : read === 2 ? '\ndata: b\r\n\r' : null)
  const events = readSse(stream)
  t.same((await events.next()).value, { event: 'message', data: 'a' })
  t.equal(reads(), 1, 'one read')
  t.same((await events.next()).value, { event: 'message', data: 'b' }, 'the LF that starts the next read is the end of a CRLF, not a blank line')
  t.equal(reads(), 2)
  t.same(await events.next(), { done: true, value: undefined })
})

const tooLarge = (limit: number) => ({ name: 'InvalidResponseError', retryable: false, message: `an event of the stream is larger than maxEventSize, ${limit} characters` })

t.test('maxEventSize: an event of exactly that many characters passes, one more fails the stream', async t => {
  // 20 characters: its lines, line ends not counted, comments included.
  const exactly = ['event: e\r\n', ':c\n', 'data: 1234\n\n']
  t.same(await read(exactly, { maxEventSize: 20 }), [{ event: 'e', data: '1234' }])
  t.same(await read(exactly, { maxEventSize: 19 }).catch((error: unknown) => error), tooLarge(19))
  t.type(await read(exactly, { maxEventSize: 19 }).catch((error: unknown) => error), InvalidResponseError)
  t.same(await read(['data: ' + 'x'.repeat(14) + '\n\n', 'data: ' + 'y'.repeat(14) + '\n\n'], { maxEventSize: 20 }), [
    { event: 'message', data: 'x'.repeat(14) }, { event: 'message', data: 'y'.repeat(14) }
  ], 'each event counts from its own first line')
  t.same(await read(['data: ' + 'x'.repeat(15) + '\n\n'], { maxEventSize: 20 }).catch((error: unknown) => error), tooLarge(20), 'a line ended in one read')
  t.same(await read(['data: 1\n', 'data: 2\ndata: 3\n', 'data: 45\n\n'], { maxEventSize: 28 }).catch((error: unknown) => error), tooLarge(28), 'lines adding up to 29')
})

t.test('maxEventSize: the stream stops at the event that is too large, its body canceled', async t => {
  let canceled = false
  const events = readSse(body(['data: ok\n\n', 'data: ' + 'x'.repeat(100) + '\n\n', 'data: later\n\n'], () => { canceled = true }), { maxEventSize: 50 })
  t.same((await events.next()).value, { event: 'message', data: 'ok' })
  t.same(await events.next().catch((error: unknown) => error), tooLarge(50))
  t.same(await events.next(), { done: true, value: undefined })
  t.equal(canceled, true)
})

t.test('maxEventSize: a line that never ends fails once it is over the limit, while the body goes on', async t => {
  let canceled = false
  const { body: stream, reads } = pulled(read => read === 1 ? 'data: ' : read <= 1000 ? 'x'.repeat(10) : null, () => { canceled = true })
  t.same(await readSse(stream, { maxEventSize: 100 }).next().catch((error: unknown) => error), tooLarge(100))
  t.equal(reads(), 11, 'failed at the read that took the line past 100 characters')
  t.equal(canceled, true)
})

t.test('maxEventSize defaults to 64 Mi characters', async t => {
  t.equal(DEFAULT_MAX_EVENT_SIZE, 64 * 1024 * 1024)
  const mebi = new TextEncoder().encode('x'.repeat(1024 * 1024))
  // A body that sends a line of 65 MiB and no line end.
  const { body: stream, reads } = pulled(read => read <= 65 ? mebi : null)
  t.same(await readSse(stream).next().catch((error: unknown) => error), tooLarge(DEFAULT_MAX_EVENT_SIZE))
  t.equal(reads(), 65)
})

t.test('maxEventSize on the HTTP transports and the factory: the stream fails with InvalidResponseError', async t => {
  const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
  const task = { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } }
  const fetchOf = (text: string) => async () => new Response(text, { headers: { 'content-type': 'text/event-stream' } })
  const jsonrpc = event({ jsonrpc: '2.0', id: 1, result: { task } })
  const rest = event({ task })
  const limit = (text: string) => text.length - 2
  const first = async (events: AsyncIterableIterator<unknown>) => await events.next().then(result => result.value, (error: unknown) => error)

  t.match(await first(new JsonRpcTransport({ url: 'http://127.0.0.1:9/', fetch: fetchOf(jsonrpc), maxEventSize: limit(jsonrpc) }).stream('SubscribeToTask', { id: 't1' })), { task })
  t.same(await first(new JsonRpcTransport({ url: 'http://127.0.0.1:9/', fetch: fetchOf(jsonrpc), maxEventSize: limit(jsonrpc) - 1 }).stream('SubscribeToTask', { id: 't1' })),
    tooLarge(limit(jsonrpc) - 1))
  t.match(await first(new RestTransport({ url: 'http://127.0.0.1:9', fetch: fetchOf(rest), maxEventSize: limit(rest) }).stream('SubscribeToTask', { id: 't1' })), { task })
  t.same(await first(new RestTransport({ url: 'http://127.0.0.1:9', fetch: fetchOf(rest), maxEventSize: limit(rest) - 1 }).stream('SubscribeToTask', { id: 't1' })),
    tooLarge(limit(rest) - 1))
  const made = createTransport({ url: 'http://127.0.0.1:9/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, { fetch: fetchOf(jsonrpc), maxEventSize: 10 })
  t.same(await first(made.stream('SubscribeToTask', { id: 't1' })), tooLarge(10))
})

t.test('maxEventSize must be a positive integer or Infinity', async t => {
  const url = 'http://127.0.0.1:9/'
  for (const bad of [0, -1, 1.5, NaN, '10' as unknown as number]) {
    t.throws(() => new JsonRpcTransport({ url, maxEventSize: bad }), new TypeError(`maxEventSize must be a positive integer or Infinity; got ${String(bad)}`))
    t.throws(() => new RestTransport({ url, maxEventSize: bad }), TypeError)
  }
  t.doesNotThrow(() => new JsonRpcTransport({ url, maxEventSize: Infinity }))
  t.same(await read(['data: ' + 'x'.repeat(1000) + '\n\n'], { maxEventSize: Infinity }), [{ event: 'message', data: 'x'.repeat(1000) }])
})
