// A test client of the a2a.v1 WebSocket dialect (seed 001) over the `ws` package: it
// offers the subprotocol, queues frames as they arrive, and reads a stream up to its
// `streamEnd` or error frame.
import WebSocket from 'ws'

export const V1_PARAMS = { 'a2a-version': '1.0' }

export interface V1Client {
  socket: WebSocket
  /** The next frame not taken by id, parsed (waits for it). */
  next (ms?: number): Promise<any>
  /** The next frame for `id`. */
  nextFor (id: unknown, ms?: number): Promise<any>
  /** Resolves with the frames received within `ms` and not taken yet (for asserting that none came). */
  quiet (ms: number): Promise<any[]>
  send (message: unknown): void
  /** Sends a request frame; `serviceParams` defaults to A2A-Version 1.0. */
  call (id: string | number, method: string, params: unknown, serviceParams?: Record<string, string>): void
  /** A request's first frame. */
  request (id: string | number, method: string, params: unknown, serviceParams?: Record<string, string>): Promise<any>
  /** A streaming request's frames, up to its streamEnd or error frame. */
  stream (id: string | number, method: string, params: unknown, serviceParams?: Record<string, string>): Promise<any[]>
  closed: Promise<{ code: number, reason: string }>
  close (code?: number): void
}

/** Origin `http://host:port` → the WebSocket URL of the route (no A2A-Version: a2a.v1 sends it per request). */
export const v1Url = (origin: string, path = '/') => origin.replace(/^http/, 'ws') + path

export async function connectV1 (url: string, options: WebSocket.ClientOptions = {}, protocols: string | string[] = 'a2a.v1'): Promise<V1Client> {
  const socket = new WebSocket(url, protocols, options)
  const frames: any[] = []
  const waiting: Array<{ match: (frame: any) => boolean, resolve: (frame: any) => void }> = []
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    const index = waiting.findIndex(waiter => waiter.match(frame))
    if (index === -1) frames.push(frame)
    else waiting.splice(index, 1)[0]?.resolve(frame)
  })
  const closed = new Promise<{ code: number, reason: string }>(resolve => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })))
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })

  const take = (match: (frame: any) => boolean, ms: number) => {
    const index = frames.findIndex(match)
    if (index !== -1) return Promise.resolve(frames.splice(index, 1)[0])
    return new Promise<any>((resolve, reject) => {
      const waiter = { match, resolve: (frame: any) => { clearTimeout(timer); resolve(frame) } }
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(waiter), 1)
        reject(new Error('no frame arrived'))
      }, ms)
      waiting.push(waiter)
    })
  }

  const client: V1Client = {
    socket,
    closed,
    next: (ms = 5000) => take(() => true, ms),
    nextFor: (id, ms = 5000) => take(frame => frame.id === id, ms),
    async quiet (ms) {
      await new Promise(resolve => setTimeout(resolve, ms))
      return frames.splice(0)
    },
    send (message) {
      socket.send(typeof message === 'string' ? message : JSON.stringify(message))
    },
    call (id, method, params, serviceParams = V1_PARAMS) {
      client.send({ jsonrpc: '2.0', id, method, params, serviceParams })
    },
    request (id, method, params, serviceParams) {
      const frame = client.nextFor(id)
      client.call(id, method, params, serviceParams)
      return frame
    },
    async stream (id, method, params, serviceParams) {
      client.call(id, method, params, serviceParams)
      const collected = []
      for (;;) {
        const frame = await client.nextFor(id)
        collected.push(frame)
        if (frame.streamEnd === true || frame.error !== undefined) return collected
      }
    },
    close (code) {
      socket.close(code)
    }
  }
  return client
}
