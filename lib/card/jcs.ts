// RFC 8785 JSON Canonicalization Scheme (JCS): the bytes an agent card signature covers.
// JCS takes its string and number forms from ECMAScript's JSON.stringify, so primitives
// go through it once the RFC's extra refusals (non-finite numbers, lone surrogates) pass.

// With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /\p{Cs}/u

/**
 * The RFC 8785 canonical JSON text of `value`: object members sorted by the UTF-16 code
 * units of their names, no whitespace, ECMAScript number and string forms.
 *
 * `value` must be JSON data: plain objects, arrays, strings, finite numbers, booleans and
 * null. An object member whose value is `undefined` is left out, as JSON.stringify leaves
 * it out of what is served. Anything else (NaN, Infinity, a lone surrogate, undefined in an
 * array or a hole in one, a bigint, a Date or other class instance) throws a TypeError: RFC 8785 §3.2.2
 * requires an error rather than a guess.
 */
export function canonicalize (value: unknown): string {
  return serialize(value, '$')
}

function serialize (value: unknown, path: string): string {
  if (value === null || typeof value === 'boolean') return String(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`JCS: ${path} is ${value}, not a finite number`)
    return JSON.stringify(value)
  }
  if (typeof value === 'string') return string(value, path)
  if (Array.isArray(value)) {
    // Indexed rather than mapped: `map` skips a hole, which would leave `[1,,2]`.
    const items: string[] = []
    for (let index = 0; index < value.length; index++) items.push(serialize(value[index], `${path}[${index}]`))
    return `[${items.join(',')}]`
  }
  if (typeof value === 'object' && isPlainObject(value)) {
    const members: string[] = []
    // The default sort compares UTF-16 code units, which is the order RFC 8785 §3.2.3 asks for.
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key]
      if (member === undefined) continue
      const memberPath = `${path}.${key}`
      members.push(`${string(key, memberPath)}:${serialize(member, memberPath)}`)
    }
    return `{${members.join(',')}}`
  }
  throw new TypeError(`JCS: ${path} is ${describe(value)}, not JSON data`)
}

function string (value: string, path: string): string {
  if (LONE_SURROGATE.test(value)) throw new TypeError(`JCS: ${path} holds a lone surrogate`)
  return JSON.stringify(value)
}

function isPlainObject (value: object): boolean {
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

function describe (value: unknown): string {
  if (typeof value === 'object' && value !== null) return `a ${value.constructor?.name ?? 'non-plain'} object`
  return typeof value
}
