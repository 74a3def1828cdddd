// Opening a WebSocket the same way in browsers and on Node, over the standard WebSocket
// API. The constructor is the one injected, else the global (browsers, Node ≥ 22), else
// the `ws` package, imported on demand on Node 20 only. Service parameters travel as
// upgrade headers where the runtime can send them (Node); a browser cannot, so there the
// version goes as `?A2A-Version=` (seed 000 §2) and anything else is refused up front
// (a call's own parameters, which a2a.v1 sends in its frame, are not upgrade headers and
// are not refused). The subprotocol the dialect offers must be the one the server selects:
// over `ws` another answer is a SubprotocolMismatchError; the standard API fails such an
// upgrade without saying why.
import { ConnectionError, SubprotocolMismatchError, UnexpectedStatusError, parseBody } from './errors.js'
import { MAX_TIMER } from './options.js'
import { withVersion } from './transport.js'

/** The part of the standard WebSocket API the transport uses (a browser's, Node's, or `ws`). */
export interface WebSocketLike {
  readonly readyState: number
  send (data: string): void
  close (code?: number, reason?: string): void
  addEventListener (type: string, listener: (event: any) => void): void
}

export type WebSocketConstructor = new (url: string, ...rest: any[]) => WebSocketLike

export interface OpenOptions {
  url: string
  serviceParams?: Record<string, string>
  WebSocket?: WebSocketConstructor
  /** The subprotocol to offer, which the server must select; '' for none. */
  subprotocol: string
  /** ms to wait for the upgrade. */
  /** ms; past setTimeout's longest (Infinity) there is no limit. */
  connectTimeout: number
}

/** The `ws` package's extras the handshake reads: the refused response, and the 101's headers. */
interface WsSocket extends WebSocketLike {
  on (event: 'unexpected-response', listener: (request: { destroy (): void }, response: NodeResponse) => void): void
  on (event: 'upgrade', listener: (response: NodeResponse) => void): void
}
interface NodeResponse {
  statusCode?: number
  headers: Record<string, string | string[] | undefined>
  setEncoding (encoding: 'utf8'): void
  on (event: 'data', listener: (chunk: string) => void): void
  on (event: 'end', listener: () => void): void
}

/** The close code of a connection that failed without a close frame (RFC 6455 §7.1.5). */
const ABNORMAL_CLOSURE = 1006

const isNode = typeof (globalThis as { process?: { versions?: { node?: unknown } } }).process?.versions?.node === 'string'

/** Is this the `ws` package's class (whose constructor takes `(url, protocols, { headers })`)? */
function isWsPackage (constructor: WebSocketConstructor): boolean {
  return typeof (constructor.prototype as { ping?: unknown }).ping === 'function'
}

/** Outside Node the upgrade carries no headers: any of the transport's service parameters but the version is refused up front. */
export function checkServiceParams (serviceParams: Record<string, string> = {}): void {
  if (isNode) return
  const others = Object.keys(serviceParams).filter(name => name.toLowerCase() !== 'a2a-version')
  if (others.length > 0) {
    throw new TypeError(`a browser cannot send ${others.join(', ')} on a WebSocket upgrade: authenticate through a gateway that turns a cookie into a header`)
  }
}

/** Whether a WebSocket is there without importing anything: injected, or the runtime's own. */
export function hasWebSocket (injected?: WebSocketConstructor): boolean {
  return injected !== undefined || typeof globalThis.WebSocket === 'function'
}

async function resolveConstructor (injected?: WebSocketConstructor): Promise<WebSocketConstructor> {
  if (injected !== undefined) return injected
  if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket
  if (!isNode) throw new ConnectionError('this runtime has no WebSocket: pass the `WebSocket` option', { retryable: false })
  // Node 20 has no global WebSocket. The specifier is a variable so that no bundler pulls
  // `ws` into a browser build; only Node ever reaches this line.
  const specifier = 'ws'
  const ws = await import(specifier) as { default?: WebSocketConstructor, WebSocket?: WebSocketConstructor }
  return (ws.WebSocket ?? ws.default) as WebSocketConstructor
}

function construct (Constructor: WebSocketConstructor, options: OpenOptions): WebSocketLike {
  const headers = withVersion(options.serviceParams)
  const protocols = options.subprotocol === '' ? [] : [options.subprotocol]
  if (isNode) {
    // `ws` takes (url, protocols, options); Node's own (undici) takes (url, { protocols, headers }).
    return isWsPackage(Constructor) ? new Constructor(options.url, protocols, { headers }) : new Constructor(options.url, { protocols, headers })
  }
  // checkServiceParams (at the transport's construction) has refused any other parameter.
  const version = Object.entries(headers).find(([name]) => name.toLowerCase() === 'a2a-version')?.[1] as string
  const url = new URL(options.url)
  url.searchParams.set('A2A-Version', version)
  return new Constructor(url.href, protocols)
}

/** Opens the connection; resolves once it is open. */
export async function openWebSocket (options: OpenOptions): Promise<WebSocketLike> {
  const Constructor = await resolveConstructor(options.WebSocket)
  const socket = construct(Constructor, options)
  return await new Promise<WebSocketLike>((resolve, reject) => {
    let settled = false
    const settle = (error?: Error) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (error === undefined) resolve(socket)
      else reject(error)
    }
    const timer = options.connectTimeout > MAX_TIMER
      ? undefined
      : setTimeout(() => {
        settle(new ConnectionError(`the WebSocket upgrade to ${options.url} did not complete within ${options.connectTimeout} ms`))
        socket.close()
      }, options.connectTimeout)
    // The standard API does not expose a refused upgrade's status, nor a subprotocol that
    // does not match (it fails that upgrade itself, WHATWG WebSockets §4): a 401/403/400/503,
    // a mismatch and a network failure look the same, an error and a close (1006) without an open.
    const failed = (closeCode: number) => settle(new ConnectionError(
      `the WebSocket connection to ${options.url} closed (${closeCode}) before it opened: the server refused the upgrade or could not be reached`,
      { closeCode }
    ))
    socket.addEventListener('open', () => settle())
    // Some runtimes (Node 20's undici) fire no close after a failed handshake: the error is enough.
    socket.addEventListener('error', () => failed(ABNORMAL_CLOSURE))
    socket.addEventListener('close', (event: { code: number }) => failed(event.code))
    if (isWsPackage(Constructor)) {
      const ws = socket as WsSocket
      // `ws` fails an upgrade whose subprotocol does not match with a bare error: the 101's header says why.
      ws.on('upgrade', (response) => {
        const header = response.headers['sec-websocket-protocol']
        const selected = typeof header === 'string' ? header : ''
        if (selected !== options.subprotocol) settle(new SubprotocolMismatchError(options.url, options.subprotocol, selected))
      })
      ws.on('unexpected-response', (request, response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk) => { text += chunk })
        response.on('end', () => {
          request.destroy()
          const challenge = response.headers['www-authenticate']
          settle(new UnexpectedStatusError(response.statusCode ?? 0, parseBody(text), Array.isArray(challenge) ? challenge.join(', ') : challenge))
        })
      })
    }
  })
}
