// Validators compiled once from the wire schemas, and the mapping of their errors to
// google.rpc.BadRequest field violations.
import type { Static, TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { KEY_CHARACTERS, KEY_PATTERN } from './wire.js'

export interface FieldViolation {
  field: string
  description: string
}

export interface Validator<T> {
  /** Returns the value typed, or the field violations that reject it. */
  check(value: unknown): { ok: true, value: T } | { ok: false, violations: FieldViolation[] }
}

/** `/message/parts/0/text` → `message.parts[0].text` (google.rpc.BadRequest field path style). */
function fieldPath (instancePath: string, extra?: string): string {
  const segments = instancePath.split('/').slice(1)
  if (extra !== undefined) segments.push(extra)
  let path = ''
  for (const segment of segments) {
    const name = segment.replace(/~1/g, '/').replace(/~0/g, '~')
    path += /^\d+$/.test(name) ? `[${name}]` : (path === '' ? name : `.${name}`)
  }
  return path
}

export function compile<S extends TSchema> (schema: S, root?: string): Validator<Static<S>> {
  const compiled = Compile(schema)
  return {
    check (value) {
      if (compiled.Check(value)) return { ok: true, value: value as Static<S> }
      const violations: FieldViolation[] = []
      const seen = new Set<string>()
      for (const error of compiled.Errors(value)) {
        const missing = error.keyword === 'required'
          ? (error.params as { requiredProperties: string[] }).requiredProperties
          : [undefined]
        for (const property of missing) {
          let field = fieldPath(error.instancePath, property)
          if (root !== undefined) field = field === '' ? root : `${root}.${field}`
          // A REQUIRED string that is empty is absent in ProtoJSON: say so.
          const empty = error.keyword === 'minLength' && (error.params as { limit?: number }).limit === 1
          const description = property !== undefined || empty
            ? 'is required'
            : error.keyword === 'pattern' && (error.params as { pattern?: unknown }).pattern === KEY_PATTERN ? KEY_CHARACTERS : error.message
          const key = `${field}\u0000${description}`
          if (seen.has(key)) continue
          seen.add(key)
          violations.push({ field, description })
        }
      }
      return { ok: false, violations }
    }
  }
}
