// A webhook receiver on 127.0.0.1 (or another loopback address) that records every delivery: method, path, headers, body.
// `answer` decides each response (default 200); it may hold a request until released.
import { createServer, type IncomingHttpHeaders } from 'node:http'

export interface Received {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: any
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` (`http://[::1]:<port>` on IPv6) */
  origin: string
  port: number
  received: Received[]
  /** Bodies received on one path, in arrival order. */
  bodies (path: string): any[]
  close (): Promise<void>
}

/** The status to answer with (and headers), or a promise of it (to hold the request). `n` counts requests on the path from 1. */
export type Answer = (path: string, n: number) => Reply | Promise<Reply>
type Reply = number | { status: number, headers: Record<string, string> }

export async function startReceiver (answer: Answer = () => 200, host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = []
  const counts = new Map<string, number>()
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', chunk => chunks.push(chunk))
    request.on('end', () => {
      const path = request.url ?? ''
      const n = (counts.get(path) ?? 0) + 1
      counts.set(path, n)
      received.push({ method: request.method ?? '', path, headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString()) })
      Promise.resolve(answer(path, n)).then(reply => {
        if (typeof reply === 'number') response.writeHead(reply).end()
        else response.writeHead(reply.status, reply.headers).end()
      }, () => response.destroy())
    })
  })
  await new Promise<void>(resolve => server.listen(0, host, resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    received,
    bodies: (path) => received.filter(entry => entry.path === path).map(entry => entry.body),
    close: () => new Promise(resolve => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}
