// A TCP proxy to a service (Redis here) whose faults a test sets on cue: new connections
// forwarded, refused (closed at once) or held open with nothing forwarded; the existing ones cut,
// or stalled (kept open, every byte dropped from then on: a service that stopped answering).
import net from 'node:net'

export type ProxyMode = 'forward' | 'refuse' | 'hang'

export interface FaultProxy {
  /** `url` with the proxy's host and port. */
  url: string
  /** What happens to the connections made from now on. */
  mode: ProxyMode
  /** Ends every connection through it now. */
  cut (): void
  /** The connections through it stop carrying anything, both ways; they stay open. */
  stall (): void
  /** Connections open through it. */
  count (): number
  /** Connections made to it so far, refused ones included. */
  attempts (): number
  close (): Promise<void>
}

export async function faultProxy (url: string): Promise<FaultProxy> {
  const target = new URL(url)
  const connections = new Set<{ client: net.Socket, upstream?: net.Socket, stalled: boolean }>()
  let attempts = 0
  const server = net.createServer(client => {
    attempts++
    if (proxy.mode === 'refuse') return client.destroy()
    const connection: { client: net.Socket, upstream?: net.Socket, stalled: boolean } = { client, stalled: false }
    connections.add(connection)
    client.on('error', () => {})
    client.on('close', () => { connections.delete(connection); connection.upstream?.destroy() })
    if (proxy.mode === 'hang') return
    const upstream = connection.upstream = net.connect(Number(target.port), target.hostname)
    upstream.on('error', () => {})
    upstream.on('close', () => client.destroy())
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('data', chunk => { if (!connection.stalled) to.write(chunk) })
    }
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const proxied = new URL(url)
  proxied.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`
  const cut = () => { for (const { client, upstream } of connections) { client.destroy(); upstream?.destroy() } }
  const proxy: FaultProxy = {
    url: proxied.href,
    mode: 'forward',
    cut,
    stall: () => { for (const connection of connections) connection.stalled = true },
    count: () => connections.size,
    attempts: () => attempts,
    close: async () => { cut(); await new Promise(resolve => server.close(resolve)) }
  }
  return proxy
}

/** What `promise` gives, when it settles within `ms`; else 'late'. */
export async function within<T> (ms: number, promise: Promise<T>): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>(resolve => { timer = setTimeout(() => resolve('late'), ms) })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}
