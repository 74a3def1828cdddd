// A small WebSocket test client over the `ws` package: frames queued as they arrive,
// helpers for one request and for a whole stream, and refused upgrades read in full.
import type { ClientRequest, IncomingMessage } from 'node:http'
import { connect as netConnect, type Socket } from 'node:net'
import type { Test } from 'tap'
import WebSocket from 'ws'

export interface WsClient {
  socket: WebSocket
  /** The next frame, parsed (waits for it). */
  next (ms?: number): Promise<any>
  /** Resolves with the frames received within `ms` (for asserting that none came). */
  quiet (ms: number): Promise<any[]>
  send (message: unknown): void
  /** Sends a request and returns the first frame with its id; rejects if none comes within `ms` (5 s). */
  request (method: string, params: unknown, id?: string | number, ms?: number): Promise<any>
  /** Sends a streaming request and returns every frame of its id up to the end marker or an error; rejects after `ms` (5 s) without one. */
  stream (method: string, params: unknown, id?: string | number, ms?: number): Promise<any[]>
  closed: Promise<{ code: number, reason: string }>
  close (): void
}

let counter = 0

export function wsUrl (origin: string, path = '/', query = '?A2A-Version=1.0'): string {
  return origin.replace(/^http/, 'ws') + path + query
}

export async function connect (url: string, options: WebSocket.ClientOptions = {}): Promise<WsClient> {
  const socket = new WebSocket(url, options)
  // Listening before the socket opens, so no frame that arrives with the upgrade is lost.
  const client = clientOf(socket)
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })
  return client
}

/** The test client over a `ws` socket, opening or open (one `fastify.injectWS` gives, say). */
export function clientOf (socket: WebSocket): WsClient {
  const frames: any[] = []
  const waiting: Array<(frame: any) => void> = []
  const byId = new Map<unknown, Array<(frame: any) => void>>()
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    const listeners = byId.get(frame.id)
    if (listeners !== undefined && listeners.length > 0) {
      for (const listener of listeners.slice()) listener(frame)
      return
    }
    const waiter = waiting.shift()
    if (waiter !== undefined) waiter(frame)
    else frames.push(frame)
  })
  const closed = new Promise<{ code: number, reason: string }>(resolve => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })))

  const client: WsClient = {
    socket,
    closed,
    next (ms = 5000) {
      const frame = frames.shift()
      if (frame !== undefined) return Promise.resolve(frame)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no frame arrived')), ms)
        waiting.push((received) => { clearTimeout(timer); resolve(received) })
      })
    },
    async quiet (ms) {
      await new Promise(resolve => setTimeout(resolve, ms))
      return frames.splice(0)
    },
    send (message) {
      socket.send(typeof message === 'string' ? message : JSON.stringify(message))
    },
    request (method, params, id = `r${++counter}`, ms = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          byId.delete(id)
          reject(new Error(`no answer for ${String(id)}`))
        }, ms)
        byId.set(id, [(frame: any) => {
          clearTimeout(timer)
          byId.delete(id)
          resolve(frame)
        }])
        client.send({ jsonrpc: '2.0', id, method, params })
      })
    },
    stream (method, params, id = `s${++counter}`, ms = 5000) {
      return new Promise((resolve, reject) => {
        const collected: any[] = []
        // Counted from the last frame: a long stream that keeps coming is no silence.
        const timer = setTimeout(() => {
          byId.delete(id)
          reject(new Error(`stream ${String(id)} stopped after ${collected.length} frames, before its end`))
        }, ms)
        byId.set(id, [(frame: any) => {
          collected.push(frame)
          if (frame.error !== undefined || frame.result?.status === 'stream_complete') {
            clearTimeout(timer)
            byId.delete(id)
            resolve(collected)
          } else timer.refresh()
        }])
        client.send({ jsonrpc: '2.0', id, method, params })
      })
    },
    close () {
      socket.close()
    }
  }
  return client
}

/** An upgrade the server refuses: its HTTP status, headers and parsed body. */
export function refusedUpgrade (url: string, options: WebSocket.ClientOptions = {}): Promise<{ status: number, headers: Record<string, unknown>, body: any }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options)
    socket.on('open', () => reject(new Error('the upgrade was accepted')))
    socket.on('error', () => {})
    socket.on('unexpected-response', (request, response) => { readRefusal(request, response).then(resolve, reject) })
  })
}

/** A refused upgrade's response read in full, its body parsed; the request then let go. */
function readRefusal (request: ClientRequest, response: IncomingMessage): Promise<{ status: number, headers: Record<string, unknown>, body: any }> {
  return new Promise(resolve => {
    let text = ''
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => { text += chunk })
    response.on('end', () => {
      request.destroy()
      resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) })
    })
  })
}

/** An upgrade's outcome, for attempts raced against each other: the open client, or the refusal read in full. */
export function openOrRefused (url: string, options: WebSocket.ClientOptions = {}): Promise<{ client: WsClient } | { refused: { status: number, body: any } }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options)
    const client = clientOf(socket)
    socket.once('open', () => resolve({ client }))
    socket.on('error', reject)
    socket.on('unexpected-response', (request, response) => {
      readRefusal(request, response).then(({ status, body }) => resolve({ refused: { status, body } }), reject)
    })
  })
}

/**
 * Writes an upgrade request by hand on a raw TCP socket (for header lines a client
 * library would normalise), and resolves once the response head arrives, with the
 * socket. Header lines are written byte for byte (latin1): pass UTF-8 bytes as such. A line
 * naming one of the upgrade's default headers (Upgrade, Sec-WebSocket-Key…) replaces it.
 */
export function rawUpgrade (origin: string, headerLines: string[], path = '/'): Promise<{ socket: Socket, response: string, rest: Buffer }> {
  const { hostname, port } = new URL(origin)
  return new Promise((resolve, reject) => {
    const socket = netConnect(Number(port), hostname)
    let buffer = Buffer.alloc(0)
    socket.on('error', reject)
    socket.on('data', function onData (chunk) {
      buffer = Buffer.concat([buffer, chunk])
      const end = buffer.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.off('data', onData)
      resolve({ socket, response: buffer.subarray(0, end).toString('latin1'), rest: buffer.subarray(end + 4) })
    })
    const nameOf = (line: string) => line.slice(0, line.indexOf(':')).toLowerCase()
    const given = new Set(headerLines.map(nameOf))
    const defaults = ['Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==']
    socket.write([
      `GET ${path} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      ...defaults.filter(line => !given.has(nameOf(line))),
      ...headerLines,
      '', ''
    ].join('\r\n'), 'latin1')
  })
}

/** One masked client text frame (RFC 6455 §5.2), for writing several in one TCP write. */
export function clientFrame (text: string, opcode = 0x1): Buffer {
  const payload = Buffer.from(text)
  const mask = Buffer.from([1, 2, 3, 4])
  let header: Buffer
  if (payload.length < 126) header = Buffer.from([0x80 | opcode, 0x80 | payload.length])
  else if (payload.length < 65536) {
    header = Buffer.alloc(4)
    header[0] = 0x80 | opcode
    header[1] = 0x80 | 126
    header.writeUInt16BE(payload.length, 2)
  } else {
    header = Buffer.alloc(10)
    header[0] = 0x80 | opcode
    header[1] = 0x80 | 127
    header.writeBigUInt64BE(BigInt(payload.length), 2)
  }
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] as number)))
  return Buffer.concat([header, mask, masked])
}

/** Reads server frames (unmasked text frames) from a raw socket. */
export function frameReader (socket: Socket, initial: Buffer = Buffer.alloc(0)) {
  let buffer = initial
  const frames: Array<{ opcode: number, payload: Buffer }> = []
  const waiting: Array<() => void> = []
  const parse = () => {
    for (;;) {
      if (buffer.length < 2) return
      const opcode = (buffer[0] as number) & 0x0f
      let length = (buffer[1] as number) & 0x7f
      let offset = 2
      if (length === 126) { if (buffer.length < 4) return; length = buffer.readUInt16BE(2); offset = 4 }
      else if (length === 127) { if (buffer.length < 10) return; length = Number(buffer.readBigUInt64BE(2)); offset = 10 }
      if (buffer.length < offset + length) return
      frames.push({ opcode, payload: buffer.subarray(offset, offset + length) })
      buffer = buffer.subarray(offset + length)
      waiting.splice(0).forEach(wake => wake())
    }
  }
  socket.on('data', (chunk) => { buffer = Buffer.concat([buffer, chunk]); parse() })
  parse()
  return {
    frames,
    async next (ms = 5000): Promise<{ opcode: number, payload: Buffer }> {
      const deadline = Date.now() + ms
      while (frames.length === 0) {
        if (Date.now() > deadline) throw new Error('no frame arrived')
        await new Promise<void>(resolve => { waiting.push(resolve); setTimeout(resolve, 50) })
      }
      return frames.shift() as { opcode: number, payload: Buffer }
    }
  }
}

/** The frames of one request id, as they arrive (alongside the client's own handling of them). */
export interface FrameWatch {
  frames: any[]
  /** Resolves once `count` frames of the id arrived. */
  reached (count: number): Promise<void>
}

export function watchFrames (client: WsClient, id: string | number): FrameWatch {
  const frames: any[] = []
  const waiting: Array<{ count: number, resolve: () => void }> = []
  client.socket.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    if (frame.id !== id) return
    frames.push(frame)
    for (const waiter of waiting.filter(waiter => frames.length >= waiter.count)) {
      waiting.splice(waiting.indexOf(waiter), 1)
      waiter.resolve()
    }
  })
  return {
    frames,
    reached: (count) => frames.length >= count ? Promise.resolve() : new Promise(resolve => waiting.push({ count, resolve }))
  }
}

/** A raw peer that never answers: the server pings it, then closes it with 1001 `idle timeout`. */
export async function pingedThenClosedIdle (t: Test, reader: ReturnType<typeof frameReader>): Promise<void> {
  t.equal((await reader.next(2000)).opcode, 0x9, 'the server pings a quiet peer')
  const close = await reader.next(2000)
  t.equal(close.opcode, 0x8)
  t.equal(close.payload.readUInt16BE(0), 1001)
  t.equal(close.payload.subarray(2).toString(), 'idle timeout')
}
