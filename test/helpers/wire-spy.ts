// A `ws` WebSocket class for a client transport that records every text frame it sends and
// receives, parsed, so that tests can assert on what crossed the wire. The socket is real.
import WebSocket from 'ws'
import type { WebSocketConstructor } from '../../lib/client/index.js'

export interface WireSpy {
  /** Give it to a transport as its `WebSocket` option. */
  WebSocket: WebSocketConstructor
  /** Frames the client sent, in order. */
  sent: any[]
  /** Frames the client received, in order. */
  received: any[]
  /** The spied sockets, in the order they were opened. */
  sockets: WebSocket[]
}

export function wireSpy (): WireSpy {
  const sent: any[] = []
  const received: any[] = []
  const sockets: WebSocket[] = []
  class SpyWebSocket extends WebSocket {
    constructor (...args: ConstructorParameters<typeof WebSocket>) {
      super(...args)
      sockets.push(this)
      // Registered before the transport's own listener: a frame is recorded before it is acted on.
      this.on('message', (data, isBinary) => { if (!isBinary) received.push(JSON.parse(String(data))) })
    }

    override send (data: any, ...rest: any[]): void {
      sent.push(JSON.parse(String(data)))
      super.send(data, ...rest)
    }
  }
  return { WebSocket: SpyWebSocket, sent, received, sockets }
}
