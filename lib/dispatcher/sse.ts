// Server-sent events for both HTTP bindings: JSON-RPC wraps each event in a JSON-RPC
// response, HTTP+JSON sends the bare StreamResponse. Only the renderers differ.
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import { InvalidAgentResponseError, toA2AError, type A2AError } from '../errors/index.js'
import type { StreamResponse } from '../schema/wire.js'

/** How a binding writes its streams. */
export interface SseWriter {
  event (event: StreamResponse): string
  /** The data of the last `event: error` of a stream that fails mid-way. */
  error (error: A2AError): string
  /** Called with an error that ends a stream mid-way (to log it). */
  failed (error: A2AError): void
  /** ms of silence after which the stream gets a `: keep-alive` comment; 0, never. */
  keepAlive: number
}

const openResponses = new WeakMap<object, Set<ServerResponse>>()

/**
 * The SSE responses being written on one HTTP server (`fastify.server`): shutdown
 * destroys those still open once their streams had their grace.
 */
export function sseResponses (server: object): Set<ServerResponse> {
  let responses = openResponses.get(server)
  if (responses === undefined) openResponses.set(server, responses = new Set())
  return responses
}

/**
 * Answers with the stream as `text/event-stream`. Its first event is read before anything
 * is written, so an error before it is thrown to the caller, to be a plain error response. A
 * client that leaves, before the first event or after, releases the subscription at once.
 */
export async function sendSse (reply: FastifyReply, events: AsyncIterableIterator<StreamResponse>, writer: SseWriter): Promise<void> {
  const raw = reply.raw
  // The client may have left while the call was being made: its 'close' has fired already.
  if (closed(raw)) return await release(events)
  let left!: () => void
  const leaving = new Promise<undefined>(resolve => { left = () => resolve(undefined) })
  raw.on('close', left)
  let first: IteratorResult<StreamResponse> | undefined
  try {
    first = await Promise.race([events.next(), leaving])
  } finally {
    raw.off('close', left)
  }
  if (first === undefined || closed(raw)) return await release(events)
  if (first.done === true) throw new InvalidAgentResponseError('the stream ended before its first event')
  await writeSse(reply, first.value, events, writer)
}

/** What an SSE client reads past: a comment line (WHATWG HTML, server-sent events). */
const KEEP_ALIVE = ': keep-alive\n\n'

async function writeSse (reply: FastifyReply, first: StreamResponse, events: AsyncIterableIterator<StreamResponse>, writer: SseWriter): Promise<void> {
  const { keepAlive } = writer
  const raw = reply.raw
  reply.hijack()
  const headers: Record<string, string | number | string[]> = {}
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value
  // No `connection` header: Node answers a client's `Connection: close` (and HTTP/2 forbids the header).
  raw.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no'
  })
  let gone = false
  const leave = () => {
    gone = true
    void release(events)
  }
  raw.on('close', leave)
  const open = sseResponses(reply.server.server)
  open.add(raw)
  // Set by every event written; a tick of the timer that finds it clear writes the comment.
  let wrote = true
  const timer = keepAlive === 0
    ? undefined
    : setInterval(() => {
      if (!wrote && raw.writableLength === 0) write(raw, KEEP_ALIVE)
      wrote = false
    }, keepAlive).unref()
  try {
    if (!write(raw, `data: ${writer.event(first)}\n\n`)) await drained(raw)
    for (let next = await events.next(); next.done !== true && !gone; next = await events.next()) {
      wrote = true
      if (!write(raw, `data: ${writer.event(next.value)}\n\n`)) await drained(raw)
    }
  } catch (thrown) {
    const error = toA2AError(thrown)
    writer.failed(error)
    if (!gone) raw.write(`event: error\ndata: ${writer.error(error)}\n\n`)
  } finally {
    clearInterval(timer)
    raw.off('close', leave)
    open.delete(raw)
    await release(events)
    raw.end()
  }
}

/** Has the client gone? (A socket destroyed emits the response's 'close' on a later tick.) */
function closed (raw: FastifyReply['raw']): boolean {
  return raw.destroyed || raw.socket?.destroyed === true
}

async function release (events: AsyncIterableIterator<StreamResponse>): Promise<void> {
  await events.return?.()
}

function write (raw: FastifyReply['raw'], chunk: string): boolean {
  return raw.destroyed ? true : raw.write(chunk)
}

function drained (raw: FastifyReply['raw']): Promise<void> {
  return new Promise(resolve => {
    const done = () => {
      raw.off('drain', done)
      raw.off('close', done)
      resolve()
    }
    raw.on('drain', done)
    raw.on('close', done)
  })
}
