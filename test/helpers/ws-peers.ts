// Small real servers for what the plugin does not do on cue, each on its own port, the
// behaviour chosen by the URL path: a WebSocket peer that selects a2a.v1 and closes with
// the path's code, and an HTTP server that answers every upgrade with the path's status.
import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { WebSocketServer } from 'ws'

export interface Peer {
  /** `ws://127.0.0.1:<port>` */
  url: string
  close (): Promise<void>
}

async function listen (http: Server, stop: () => void): Promise<Peer> {
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve))
  return {
    url: `ws://127.0.0.1:${(http.address() as { port: number }).port}`,
    close: () => new Promise(resolve => { stop(); http.close(() => resolve()) })
  }
}

/**
 * `<url>/<code>`: selects a2a.v1 and, at the first request, closes with that code and the
 * reason `closed <code>`; a SendStreamingMessage first gets one event, a task `task-7`.
 */
export async function closingPeer (): Promise<Peer> {
  const http = createServer()
  const peer = new WebSocketServer({ server: http, handleProtocols: (offered) => offered.has('a2a.v1') ? 'a2a.v1' : false })
  peer.on('connection', (socket, request) => {
    const code = Number(request.url?.slice(1))
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data))
      if (frame.method === 'SendStreamingMessage') {
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result: { task: { id: 'task-7', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } } }))
      }
      socket.close(code, `closed ${code}`)
    })
  })
  return await listen(http, () => { for (const client of peer.clients) client.terminate(); peer.close() })
}

/** `<url>/<status>`: every upgrade is answered with that status and a small HTML page, as a web server that is no WebSocket endpoint does. */
export async function statusPeer (): Promise<Peer> {
  const http = createServer()
  const sockets = new Set<Socket>()
  http.on('upgrade', (request, socket: Socket) => {
    sockets.add(socket)
    const status = Number(request.url?.slice(1))
    const body = `<!doctype html><title>${status}</title><h1>${status}</h1>`
    socket.end(`HTTP/1.1 ${status} Status ${status}\r\nContent-Type: text/html\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
  })
  return await listen(http, () => { for (const socket of sockets) socket.destroy() })
}
