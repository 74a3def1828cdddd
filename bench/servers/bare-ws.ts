// The WebSocket ceiling: a bare `ws` server that sends every text frame straight back.
import { once } from 'node:events'
import { WebSocketServer } from 'ws'
import { startedOn, type StartedServer } from './common.js'

export async function start (): Promise<StartedServer> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  server.on('connection', (socket) => {
    socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }))
  })
  await once(server, 'listening')
  return startedOn(server)
}
