// Server-sent events for both HTTP bindings: JSON-RPC wraps each event in a JSON-RPC
// response, HTTP+JSON sends the bare StreamResponse. Only the renderers differ.
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import { toA2AError, type A2AError } from '../errors/index.js'
import type { StreamResponse } from '../schema/wire.js'

export interface SseRender {
  event (event: StreamResponse): string
  /** The data of the last `event: error` of a stream that fails mid-way. */
  error (error: A2AError): string
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
 * Writes the stream as `text/event-stream`. The first event has already been read by
 * the caller (errors before it are plain responses); a reader that disconnects releases
 * the subscription at once.
 */
export async function writeSse (
  reply: FastifyReply,
  first: StreamResponse,
  events: AsyncIterableIterator<StreamResponse>,
  render: SseRender,
  onError: (error: A2AError) => void
): Promise<void> {
  const raw = reply.raw
  reply.hijack()
  const headers: Record<string, string | number | string[]> = {}
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value
  raw.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no'
  })
  let gone = false
  const release = () => {
    gone = true
    void events.return?.()
  }
  raw.on('close', release)
  const open = sseResponses(reply.server.server)
  open.add(raw)
  try {
    if (!write(raw, `data: ${render.event(first)}\n\n`)) await drained(raw)
    for (let next = await events.next(); next.done !== true && !gone; next = await events.next()) {
      if (!write(raw, `data: ${render.event(next.value)}\n\n`)) await drained(raw)
    }
  } catch (thrown) {
    const error = toA2AError(thrown)
    onError(error)
    if (!gone) raw.write(`event: error\ndata: ${render.error(error)}\n\n`)
  } finally {
    raw.off('close', release)
    open.delete(raw)
    await events.return?.()
    raw.end()
  }
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
