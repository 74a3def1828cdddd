// Service parameters (spec §3.2.6) from HTTP request headers, read from the raw
// header lines so that every binding applies the same rules: names lowercased, a value
// that is not visible ASCII left out, a header sent on several lines joined in order.

/** Visible ASCII, space and tab: anything else (valid UTF-8 included) is left out. */
const VISIBLE_ASCII = /^[\t\x20-\x7e]*$/

export type ServiceParams = Record<string, string>

/** The default of `drop`, made once rather than at every request. */
const DROP_NONE: ReadonlySet<string> = new Set()

/** A header sent on several lines, joined in order as HTTP joins them (cookies with `; `). */
function joined (name: string, previous: string | undefined, value: string): string {
  return previous === undefined ? value : `${previous}${name === 'cookie' ? '; ' : ', '}${value}`
}

/**
 * `rawHeaders` is Node's flat `[name, value, name, value, …]` list. Names in `drop` are
 * left out (lowercase).
 */
export function serviceParamsFromHeaders (rawHeaders: readonly string[], drop: ReadonlySet<string> = DROP_NONE): ServiceParams {
  const params: ServiceParams = Object.create(null)
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase()
    const value = rawHeaders[i + 1] as string
    if (drop.has(name) || !VISIBLE_ASCII.test(value)) continue
    params[name] = joined(name, params[name], value)
  }
  return params
}

/**
 * The one service parameter `name` (lowercase) of `rawHeaders`: what
 * `serviceParamsFromHeaders(rawHeaders)[name]` holds, without building the others.
 */
export function serviceParamFromHeaders (rawHeaders: readonly string[], name: string): string | undefined {
  let param: string | undefined
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const header = rawHeaders[i] as string
    // The length first: most headers are told apart without a lowercased copy.
    if (header.length !== name.length || header.toLowerCase() !== name) continue
    const value = rawHeaders[i + 1] as string
    if (VISIBLE_ASCII.test(value)) param = joined(name, param, value)
  }
  return param
}

/**
 * Service parameters sent as a flat JSON map of strings (an a2a.v1 WebSocket frame's
 * `serviceParams`), under the header rules: names lowercased, a value that is not
 * visible ASCII left out. Names starting with a colon are the server's own and are left
 * out too. Undefined when `map` is not an object of string values.
 */
export function serviceParamsFromMap (map: unknown): ServiceParams | undefined {
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return undefined
  const params: ServiceParams = Object.create(null)
  for (const [name, value] of Object.entries(map)) {
    if (typeof value !== 'string') return undefined
    if (name.startsWith(':') || !VISIBLE_ASCII.test(value)) continue
    params[name.toLowerCase()] = value
  }
  return params
}

/**
 * The A2A-Version asked for: the `a2a-version` service parameter (`header`) wins over the
 * `A2A-Version` query parameter (spec §3.6.1).
 */
export function requestedVersion (header: string | undefined, query: unknown): string | undefined {
  if (header !== undefined && header.trim() !== '') return header.trim()
  const fromQuery = (query as Record<string, unknown> | undefined)?.['A2A-Version']
  const value = Array.isArray(fromQuery) ? fromQuery[0] : fromQuery
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

/** The extensions asked for: the `a2a-extensions` service parameter (`header`), a comma-separated list of URIs. */
export function requestedExtensions (header: string | undefined): string[] {
  if (header === undefined) return []
  return header.split(',').map(uri => uri.trim()).filter(uri => uri !== '')
}
