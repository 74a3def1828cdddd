// The one entry point from request text to a JSON value, for every binding (JSON-RPC
// bodies, WebSocket frames, REST bodies). Hostile nesting is refused by a linear scan
// before JSON.parse, so no parse, schema check or re-serialisation ever walks a tree
// deeper than the limit, and the scan stops at the first bracket past it. Text with no
// more brackets than the limit cannot nest past it: most requests skip the scan.
import { InvalidRequestError, JsonParseError, type A2AError } from './errors/index.js'

/** Default `maxJsonDepth`: arrays and objects nested inside one another. */
export const DEFAULT_MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

/**
 * The offset of the first `{` or `[` (outside strings) that opens a container deeper than
 * `maxDepth`, or -1 when there is none. Brackets inside strings do not count. On text that
 * is not JSON the answer only decides which error the caller reports. A string is stepped
 * over whole (indexOf), so what is scanned character by character is the structure alone.
 */
export function depthExceededAt (text: string, maxDepth: number): number {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = closingQuote(text, i)
      // An unterminated string runs to the end: nothing after it counts.
      if (i === -1) return -1
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return i
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
    }
  }
  return -1
}

/** The quote that ends the string opened at `open`: the next one after an even run of backslashes. */
function closingQuote (text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return at
  }
  return -1
}

/** Could `text` nest deeper than `maxDepth`? Not with that many `{` and `[` in all (strings included): the common case, counted fast. */
function mayNestDeeper (text: string, maxDepth: number): boolean {
  let opening = 0
  for (let at = text.indexOf('{'); at !== -1; at = text.indexOf('{', at + 1)) if (++opening > maxDepth) return true
  for (let at = text.indexOf('['); at !== -1; at = text.indexOf('[', at + 1)) if (++opening > maxDepth) return true
  return false
}

export type ParsedJson = { ok: true, value: unknown } | { ok: false, error: A2AError }

/**
 * Parses request text: too deep → InvalidRequest (-32600, HTTP 400), not JSON → JsonParse
 * (-32700, HTTP 400). The caller has already applied the size limit.
 */
export function parseJson (text: string, maxDepth: number): ParsedJson {
  if (mayNestDeeper(text, maxDepth) && depthExceededAt(text, maxDepth) !== -1) {
    return { ok: false, error: new InvalidRequestError(`JSON nested deeper than ${maxDepth} levels`) }
  }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false, error: new JsonParseError() }
  }
}
