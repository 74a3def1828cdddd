// WebSocket load: a pipeline of unary calls over one connection, one long stream, and
// many idle connections. Every loop stops at a count or a deadline, whichever is first.
import WebSocket from 'ws'

export function openSocket (url: string, timeoutMs = 10_000): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url)
    const timer = setTimeout(() => { socket.terminate(); reject(new Error(`${url}: no upgrade within ${timeoutMs} ms`)) }, timeoutMs)
    socket.once('open', () => { clearTimeout(timer); resolve(socket) })
    socket.once('error', (error) => { clearTimeout(timer); reject(error) })
  })
}

export function closeSocket (socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve()
  return new Promise(resolve => {
    socket.once('close', () => resolve())
    socket.close()
    // A peer that does not answer the close handshake is cut off.
    setTimeout(() => socket.terminate(), 2000).unref()
  })
}

export interface PipelineLoad {
  url: string
  /** The text of request number `id` (a JSON-RPC frame with that id). */
  frame (id: number): string
  /** Throws when a reply is not what the server should have sent. */
  check (reply: { id?: unknown, result?: unknown, error?: unknown }): void
  inFlight: number
  durationMs: number
  /** Upper bound on the calls sent, whatever the duration. */
  maxCalls: number
}

export interface PipelineFigure {
  roundTripsPerSec: number
  completed: number
}

/** Keeps `inFlight` requests outstanding on one connection: each reply sends the next request. */
export async function measurePipeline (load: PipelineLoad): Promise<PipelineFigure> {
  const socket = await openSocket(load.url)
  try {
    return await new Promise<PipelineFigure>((resolve, reject) => {
      let sent = 0
      let completed = 0
      const start = process.hrtime.bigint()
      const deadline = Date.now() + load.durationMs
      const sendNext = () => { socket.send(load.frame(++sent)) }
      const finish = () => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9
        resolve({ roundTripsPerSec: completed / seconds, completed })
      }
      // A reply that never comes fails the run rather than hanging it.
      const watchdog = setTimeout(() => reject(new Error(`${load.url}: ${sent - completed} replies missing`)), load.durationMs + 10_000)
      socket.on('error', reject)
      socket.on('message', (data) => {
        try {
          load.check(JSON.parse(data.toString()))
        } catch (error) {
          clearTimeout(watchdog)
          reject(error)
          return
        }
        completed++
        const more = sent < load.maxCalls && Date.now() < deadline
        if (more) sendNext()
        else if (completed === sent) { clearTimeout(watchdog); finish() }
      })
      for (let i = 0; i < load.inFlight; i++) sendNext()
    })
  } finally {
    await closeSocket(socket)
  }
}

export interface StreamFigure {
  ms: number
  events: number
}

/**
 * One streaming call over a fresh connection, timed from the request to the stream's
 * end marker. `isEnd` tells the last frame of the stream; every frame is parsed.
 */
export async function measureWsStream (url: string, request: string, isEnd: (frame: any) => boolean, timeoutMs: number): Promise<StreamFigure & { last: any }> {
  const socket = await openSocket(url)
  try {
    return await new Promise((resolve, reject) => {
      let events = 0
      const timer = setTimeout(() => reject(new Error(`${url}: the stream did not end within ${timeoutMs} ms (${events} frames)`)), timeoutMs)
      socket.on('error', reject)
      const start = process.hrtime.bigint()
      socket.on('message', (data) => {
        const frame = JSON.parse(data.toString())
        events++
        if (frame.error !== undefined || isEnd(frame)) {
          clearTimeout(timer)
          resolve({ ms: Number(process.hrtime.bigint() - start) / 1e6, events, last: frame })
        }
      })
      socket.send(request)
    })
  } finally {
    await closeSocket(socket)
  }
}

/** Opens `count` connections, `parallel` handshakes at a time; they stay idle until closed. */
export async function openIdle (url: string, count: number, parallel: number): Promise<WebSocket[]> {
  const sockets: WebSocket[] = []
  let next = 0
  let failed = false
  const worker = async () => {
    while (next < count && !failed) {
      next++
      const socket = await openSocket(url)
      socket.on('error', () => {})
      sockets.push(socket)
    }
  }
  try {
    await Promise.all(Array.from({ length: parallel }, worker))
  } catch (error) {
    failed = true
    sockets.forEach(socket => socket.terminate())
    throw error
  }
  return sockets
}

/** Drops the connections without the close handshake: thousands of them close in a moment. */
export async function dropAll (sockets: WebSocket[]): Promise<void> {
  await Promise.all(sockets.map(socket => new Promise<void>(resolve => {
    if (socket.readyState === WebSocket.CLOSED) return resolve()
    socket.once('close', () => resolve())
    socket.terminate()
  })))
}

/** Sequential calls on one connection: the latency of each, in ms. */
export async function sequentialLatencies (socket: WebSocket, frame: (id: number) => string, check: (reply: any) => void, calls: number): Promise<number[]> {
  const latencies: number[] = []
  for (let id = 1; id <= calls; id++) {
    const start = process.hrtime.bigint()
    const reply = await new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`call ${id}: no reply within 10 s`)), 10_000)
      socket.once('message', (data) => { clearTimeout(timer); resolve(JSON.parse(data.toString())) })
      socket.send(frame(id))
    })
    latencies.push(Number(process.hrtime.bigint() - start) / 1e6)
    check(reply)
  }
  return latencies
}
