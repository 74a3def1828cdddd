// PostgreSQL for tests: the local server (127.0.0.1:5432, trust auth, database `test`),
// and fresh schemas dropped at teardown. Without a reachable server the tests skip,
// except under CI, where that is a failure.
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import pg from 'pg'
import type { Test } from 'tap'

const CANDIDATES = [
  process.env.A2A_TEST_POSTGRES,
  'postgres://postgres@127.0.0.1:5432/test',
  'postgres://root@127.0.0.1:5432/test'
].filter((url): url is string => url !== undefined && url !== '')

const inCi = process.env.CI !== undefined && process.env.CI !== ''
/** Under CI the server may still be starting: keep trying this long. */
const CI_WAIT = 20_000

let found: Promise<string | undefined> | undefined

async function firstAnswering (): Promise<string | undefined> {
  for (const connectionString of CANDIDATES) {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2000 })
    try {
      await client.connect()
      await client.query('SELECT 1')
      return connectionString
    } catch {
    } finally {
      await client.end().catch(() => {})
    }
  }
  return undefined
}

/** The first connection string that answers, or undefined. */
export function postgresUrl (): Promise<string | undefined> {
  found ??= (async () => {
    const deadline = Date.now() + (inCi ? CI_WAIT : 0)
    for (;;) {
      const url = await firstAnswering()
      if (url !== undefined || Date.now() >= deadline) return url
      await new Promise(resolve => setTimeout(resolve, 500))
    }
  })()
  return found
}

/**
 * The connection string, or undefined after marking `t` skipped (failed under CI, where
 * the server gets some time to come up) because no PostgreSQL answered.
 */
export async function requirePostgres (t: Test): Promise<string | undefined> {
  const url = await postgresUrl()
  if (url !== undefined) return url
  const reason = `no PostgreSQL reachable at 127.0.0.1:5432 (tried ${CANDIDATES.join(', ')})`
  if (inCi) t.fail(`${reason}; CI must run the PostgreSQL tests`)
  else t.plan(0, `skipped: ${reason}`)
  return undefined
}

/** A schema name no other test file uses; the caller drops it with `dropSchemas`. */
export function uniqueSchema (label: string): string {
  return `a2a_test_${label}_${process.pid}_${randomBytes(4).toString('hex')}`
}

export async function dropSchemas (url: string, schemas: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)
  } finally {
    await client.end()
  }
}

/**
 * A login role with no privilege but the data ones `grants` gives it (SQL run as the test's own
 * superuser, `$ROLE` standing for its name), and the connection string that logs in as it.
 * Teardown revokes what it was granted and drops it.
 */
export async function dataOnlyRole (t: Test, url: string, grants: string): Promise<string> {
  const role = `a2a_data_only_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN`)
    await admin.query(grants.replaceAll('$ROLE', role))
  } finally {
    await admin.end()
  }
  t.teardown(async () => {
    const cleanup = new pg.Client({ connectionString: url })
    await cleanup.connect()
    try {
      await cleanup.query(`DROP OWNED BY ${role}`)
      await cleanup.query(`DROP ROLE ${role}`)
    } finally {
      await cleanup.end()
    }
  })
  const asRole = new URL(url)
  asRole.username = role
  return asRole.href
}

export interface PostgresProxy {
  /** The connection string through the proxy. */
  url: string
  /** Ends every connection through it now. */
  cut (): void
  /**
   * The connections through it now go silent for ever: every byte either way is dropped, the
   * sockets kept open (a network path lost with no reset, a NAT that forgot them). Later
   * connections follow `mode`.
   */
  silence (): void
  /** The connections to it still open. */
  connections (): number
  close (): Promise<void>
}

/**
 * A TCP proxy to the PostgreSQL of `url`, for connections lost, refused or left hanging on cue:
 * what `mode()` says when a connection arrives decides whether it is forwarded, closed at once,
 * or held open with nothing ever sent on (a database that stopped answering).
 */
export async function postgresProxy (url: string, mode: () => 'forward' | 'refuse' | 'hang' = () => 'forward'): Promise<PostgresProxy> {
  const target = new URL(url)
  const sockets = new Set<net.Socket>()
  const piped = new Set<[net.Socket, net.Socket]>()
  const clients = new Set<net.Socket>()
  const proxy = net.createServer(socket => {
    const now = mode()
    if (now === 'refuse') return socket.destroy()
    sockets.add(socket)
    clients.add(socket)
    socket.on('close', () => { sockets.delete(socket); clients.delete(socket) })
    if (now === 'hang') return
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    for (const [one, other] of [[socket, upstream], [upstream, socket]] as const) {
      const pipe: [net.Socket, net.Socket] = [one, other]
      sockets.add(one)
      piped.add(pipe)
      one.on('error', () => other.destroy())
      one.on('close', () => { sockets.delete(one); piped.delete(pipe); other.destroy() })
      one.pipe(other)
    }
  })
  await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve))
  const proxied = new URL(url)
  proxied.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`
  const cut = () => { for (const socket of sockets) socket.destroy() }
  const silence = () => {
    for (const [one, other] of piped) {
      one.unpipe(other)
      // Read and dropped (unpipe paused it): an end still reaches the other side's socket.
      one.on('data', () => {})
      one.resume()
    }
    piped.clear()
  }
  return { url: proxied.href, cut, silence, connections: () => clients.size, close: async () => { cut(); await new Promise(resolve => proxy.close(resolve)) } }
}
