// The SSRF guard for webhook URLs (spec §11, §13): a webhook must not reach the
// server's own network. A URL is refused when its host is, or resolves to, an address
// that is not globally routable; an allow-list lets tests and trusted deployments
// through. Checked when a config is created and again at delivery, on the address the
// connection actually uses.
import { lookup as dnsLookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/** Resolves a host name to every address it has (default: the system resolver, as `dns.lookup`). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })) as ResolvedAddress[]

/** Not globally routable: loopback, private, shared, link-local (cloud metadata), multicast, reserved, unspecified. */
const BLOCKED = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['192.88.99.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) BLOCKED.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  // ::/96 covers the unspecified address, loopback and the deprecated IPv4-compatible form;
  // 64:ff9b:1::/48 is local-use NAT64 (RFC 8215); 2001::/32 is Teredo, a tunnel to an IPv4 host.
  ['::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]
] as const) BLOCKED.addSubnet(network, prefix, 'ipv6')

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad is folded in). */
function ipv6Groups (address: string): number[] {
  let text = address
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const parse = (part: string) => part === '' ? [] : part.split(':').map(group => Number.parseInt(group, 16))
  const front = parse(head)
  const back = tail === undefined ? [] : parse(tail)
  return [...front, ...new Array(8 - front.length - back.length).fill(0), ...back]
}

const ipv4From = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`

/** The IPv4 address an IPv6 address carries (mapped, translated, NAT64, 6to4), if any. */
function embeddedIpv4 (groups: number[]): string | undefined {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return ipv4From(g6, g7)
  // IPv4-translated, ::ffff:0:a.b.c.d (RFC 2765)
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) return ipv4From(g6, g7)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4From(g6, g7)
  if (g0 === 0x2002) return ipv4From(g1 ?? 0, g2 ?? 0)
  return undefined
}

/** Is this IP address one a webhook must not reach? */
export function isBlockedAddress (address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const family = isIP(bare)
  if (family === 4) return BLOCKED.check(bare, 'ipv4')
  if (family !== 6) return true
  const embedded = embeddedIpv4(ipv6Groups(bare.toLowerCase()))
  if (embedded !== undefined && BLOCKED.check(embedded, 'ipv4')) return true
  return BLOCKED.check(bare, 'ipv6')
}

/** A host name as compared: lower case, no trailing dot (`Hook.test.` is `hook.test`). */
const comparedName = (name: string): string => name.toLowerCase().replace(/\.$/, '')

/** A URL's host as compared: no brackets, lower case, no trailing dot. */
export function hostOf (url: URL): string {
  return comparedName(url.hostname.replace(/^\[|\]$/g, ''))
}

/** Names that always mean this machine (RFC 6761), whatever a resolver says. */
const isLocalName = (host: string) => host === 'localhost' || host.endsWith('.localhost')

export class WebhookRefusedError extends Error {
  override name = 'WebhookRefusedError'
  readonly code = 'A2A_WEBHOOK_REFUSED'
  /**
   * The message, with what the server may know but the caller must not: the internal address a
   * name resolves to (told to a client, refusals would map the server's network). For logs and
   * delivery reports.
   */
  readonly detail: string

  constructor (message: string, detail = message) {
    super(message)
    this.detail = detail
  }
}

/**
 * Allow-list entries: a host name (matched exactly, case-insensitively: any address it
 * resolves to is then allowed), an IP address, or a CIDR range such as `127.0.0.0/8`.
 */
export class WebhookGuard {
  readonly #names = new Set<string>()
  readonly #allowed = new BlockList()
  readonly #resolve: Resolver

  constructor (allow: string[], resolve: Resolver = systemResolver) {
    this.#resolve = resolve
    for (const entry of allow) {
      const [network = '', prefix] = entry.split('/')
      const family = isIP(network.replace(/^\[|\]$/g, ''))
      if (family === 0) this.#names.add(comparedName(entry))
      else {
        const type = family === 4 ? 'ipv4' : 'ipv6'
        const bare = network.replace(/^\[|\]$/g, '')
        if (prefix === undefined) this.#allowed.addAddress(bare, type)
        else this.#allowed.addSubnet(bare, Number(prefix), type)
      }
    }
  }

  /** What is wrong with an allow-list entry, or undefined: for option checking. */
  static checkEntry (entry: unknown): string | undefined {
    if (typeof entry !== 'string' || entry === '') return 'must be a host name, an IP address or a CIDR range'
    const [network = '', prefix, extra] = entry.split('/')
    if (prefix === undefined) return undefined
    const family = isIP(network.replace(/^\[|\]$/g, ''))
    const max = family === 4 ? 32 : 128
    if (family === 0 || extra !== undefined || !/^\d+$/.test(prefix) || Number(prefix) > max) return `${entry} is not a CIDR range`
    return undefined
  }

  #addressAllowed (address: string): boolean {
    const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
    const family = isIP(bare)
    if (family === 0) return false
    return this.#allowed.check(bare, family === 4 ? 'ipv4' : 'ipv6') || !isBlockedAddress(bare)
  }

  /** Allowed by name: the host is on the allow-list, so whatever it resolves to is too. */
  trustedName (host: string): boolean {
    return this.#names.has(comparedName(host))
  }

  /**
   * The check without DNS: refuses a blocked IP literal or a local name. Returns whether
   * the host still needs resolving (a name that is not trusted).
   */
  checkHost (host: string): 'allowed' | 'resolve' {
    if (this.trustedName(host)) return 'allowed'
    if (isIP(host) !== 0) {
      if (!this.#addressAllowed(host)) throw new WebhookRefusedError(`${host} is not a public address`)
      return 'allowed'
    }
    if (isLocalName(host)) throw new WebhookRefusedError(`${host} names this machine`)
    return 'resolve'
  }

  /** Throws when one of the addresses is blocked: a name with any internal address is refused whole. */
  checkAddresses (host: string, addresses: ResolvedAddress[]): void {
    const blocked = addresses.find(({ address }) => !this.#addressAllowed(address))
    if (blocked !== undefined) {
      throw new WebhookRefusedError(`${host} does not resolve to a public address`, `${host} resolves to ${blocked.address}, which is not a public address`)
    }
  }

  /**
   * At config creation: refuses a blocked host or a name resolving to a blocked address. A
   * name that does not resolve (yet) passes; delivery checks it again.
   */
  async checkAtCreation (url: URL, resolveTimeout: number): Promise<void> {
    const host = hostOf(url)
    if (this.checkHost(host) === 'allowed') return
    let addresses: ResolvedAddress[]
    try {
      addresses = await withTimeout(this.#resolve(host), resolveTimeout)
    } catch {
      return
    }
    this.checkAddresses(host, addresses)
  }

  /** At delivery: the addresses to connect to, all checked. Throws WebhookRefusedError or the resolver's error. */
  async resolveForDelivery (host: string): Promise<ResolvedAddress[]> {
    const addresses = await this.#resolve(host)
    if (addresses.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' })
    if (!this.trustedName(host)) this.checkAddresses(host, addresses)
    return addresses
  }
}

function withTimeout<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('lookup timed out')), ms) })
  ]).finally(() => clearTimeout(timer))
}
