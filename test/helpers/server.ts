// Shared test helpers: a real listening server running the conformance agent, and
// small clients for JSON-RPC over HTTP and SSE.
import http from 'node:http'
import Fastify, { type FastifyInstance } from 'fastify'
import { a2aWebSocket, type A2APluginOptions, type Message } from '../../lib/index.js'
import { conformanceAgent, conformanceCard } from '../../examples/agent.js'

export interface TestServer {
  fastify: FastifyInstance
  /** `http://127.0.0.1:<port>` */
  origin: string
  /** The JSON-RPC endpoint (origin + prefix). */
  endpoint: string
  close (): Promise<void>
}

export async function startServer (options: Partial<A2APluginOptions> = {}): Promise<TestServer> {
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, extendedCard: conformanceCard, ...options })
  await fastify.listen({ host: '127.0.0.1', port: 0 })
  const address = fastify.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const origin = `http://127.0.0.1:${port}`
  return { fastify, origin, endpoint: origin + (options.prefix ?? ''), close: () => fastify.close() }
}

let counter = 0
export function userMessage (text: string, extra: Partial<Message> = {}): Message {
  return { messageId: `m-${++counter}`, role: 'ROLE_USER', parts: [{ text }], ...extra }
}

export interface RpcReply {
  status: number
  headers: Headers
  /** The parsed body, or undefined for an empty one. */
  body: any
  text: string
}

export const V1 = { 'a2a-version': '1.0' }

/** POSTs `body` (an object is JSON-encoded) with A2A-Version 1.0 unless `headers` says otherwise. */
export async function post (url: string, body: unknown, headers: Record<string, string> = V1): Promise<RpcReply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, body: text === '' ? undefined : JSON.parse(text) }
}

let rpcId = 0
/** One JSON-RPC call; returns the whole response object. */
export async function call (url: string, method: string, params: unknown, headers?: Record<string, string>): Promise<any> {
  const reply = await post(url, { jsonrpc: '2.0', id: ++rpcId, method, params }, headers)
  return reply.body
}

/** One JSON-RPC call that must succeed; returns its result. */
export async function result (url: string, method: string, params: unknown): Promise<any> {
  const response = await call(url, method, params)
  if (response.error !== undefined) throw new Error(`${method} failed: ${JSON.stringify(response.error)}`)
  return response.result
}

export interface SseEvent {
  event?: string
  data: any
}

/** Parses a complete `text/event-stream` body. */
export function parseSse (text: string): SseEvent[] {
  const events: SseEvent[] = []
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue
    let event: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
    }
    events.push(event === undefined ? { data: JSON.parse(data.join('\n')) } : { event, data: JSON.parse(data.join('\n')) })
  }
  return events
}

/** A streaming JSON-RPC call read to its end; `id` defaults to a fresh number. */
export async function stream (url: string, method: string, params: unknown, headers: Record<string, string> = V1, id: string | number = ++rpcId) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params })
  })
  const text = await response.text()
  const contentType = response.headers.get('content-type') ?? ''
  return { status: response.status, contentType, events: contentType.startsWith('text/event-stream') ? parseSse(text) : [], body: contentType.startsWith('application/json') ? JSON.parse(text) : undefined }
}

/** Polls until `check` returns true, or fails after `ms`. */
export async function eventually (check: () => boolean | Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

export interface OpenStream {
  events: SseEvent[]
  response: http.IncomingMessage
  ended: Promise<void>
  /** Drops the connection, as a client that goes away does. */
  disconnect (): void
}

/** Opens a streaming request (JSON-RPC or HTTP+JSON) and resolves once `count` events arrived; the response stays open. */
export function openSse (url: string, method: string, body: unknown, count: number): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...V1 }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const request = http.request(url, { method, headers }, (response) => {
      let buffer = ''
      const events: SseEvent[] = []
      const ended = new Promise<void>(resolveEnd => response.on('end', resolveEnd).on('close', resolveEnd))
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        buffer += chunk
        const blocks = buffer.split('\n\n')
        buffer = blocks.pop() ?? ''
        for (const block of blocks) events.push(...parseSse(block + '\n\n'))
        if (events.length >= count) {
          resolve({ events, response, ended, disconnect: () => { response.destroy(); request.destroy() } })
        }
      })
    })
    request.on('error', reject)
    request.end(body === undefined ? undefined : JSON.stringify(body))
  })
}
