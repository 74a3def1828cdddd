// Serialisers compiled from the wire schemas, as the validators are. A task, a message or
// an event is written with the fields its schema names, in the schema's order (ProtoJSON's),
// each read by name: unknown fields are ignored (spec §5.7). `JSON.stringify` looks up
// every key and every `toJSON` instead; on a completed task this takes about 30 % less
// time. A value of any JSON (`data`, `metadata`) is JSON.stringify's, `toJSON` included. A
// value that is not of the schema's shape (a value of another type, a missing leading
// required field, a `toJSON` where the schema names fields) is handed to `JSON.stringify`
// whole.
import type { TSchema } from 'typebox'
import { StreamResponse } from './wire.js'

/** A generated serialiser: a string, or undefined when `value` is not of the shape it knows. */
type Generated = (value: unknown) => string | undefined

/** Characters `JSON.stringify` escapes, and surrogates (it escapes the lone ones). */
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/

function quote (text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : '"' + text + '"'
}

/**
 * The JSON of a value with a `toJSON`, as `JSON.stringify` writes it under `key` (which it
 * passes to `toJSON`), or undefined when it writes none.
 */
function underKey (key: string, value: unknown): string | undefined {
  const holder = JSON.stringify({ [key]: value })
  return holder.length === 2 ? undefined : holder.slice(JSON.stringify(key).length + 2, -1)
}

/** Helpers the generated code calls, passed in rather than captured. */
const runtime = { quote, underKey, isArray: Array.isArray }

type Kind = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'other'

function kindOf (schema: TSchema): Kind {
  const { type } = schema as { type?: unknown }
  if (type === 'object' && typeof (schema as { properties?: unknown }).properties === 'object') return 'object'
  if (type === 'array' && typeof (schema as { items?: unknown }).items === 'object') return 'array'
  if (type === 'string') return 'string'
  if (type === 'number' || type === 'integer') return 'number'
  if (type === 'boolean') return 'boolean'
  const { enum: members } = schema as { enum?: unknown }
  if (Array.isArray(members) && members.every(member => typeof member === 'string')) return 'string'
  return 'other'
}

/**
 * Generates one function per object and array schema (shared schemas once). The code of a
 * property, given its value in `v`, appends `"key":json` to `out` or returns undefined.
 */
class Generator {
  readonly #names = new Map<TSchema, string>()
  readonly #functions: string[] = []

  get source (): string {
    return this.#functions.join('\n')
  }

  /** The name of the function serialising `schema` (an object or an array). */
  functionFor (schema: TSchema): string {
    let name = this.#names.get(schema)
    if (name !== undefined) return name
    name = `s${this.#names.size}`
    this.#names.set(schema, name)
    this.#functions.push(kindOf(schema) === 'object' ? this.#object(name, schema) : this.#array(name, schema))
    return name
  }

  #object (name: string, schema: TSchema): string {
    const { properties, required = [] } = schema as { properties: Record<string, TSchema>, required?: string[] }
    const keys = Object.keys(properties)
    // Led by a required property that always has a JSON, the object's others all follow a comma.
    const first = keys[0]
    const led = first !== undefined && required.includes(first) && kindOf(properties[first] as TSchema) !== 'other'
    const steps = keys.map((key, index) => {
      const label = JSON.stringify(key)
      const value = this.#value(properties[key] as TSchema, label)
      if (led && index === 0) {
        return `v = o[${label}]
        if (v === undefined) return undefined
        ${value}
        out += ${JSON.stringify(label + ':')} + j`
      }
      const prefix = led ? JSON.stringify(',' + label + ':') : `(out.length === 1 ? ${JSON.stringify(label + ':')} : ${JSON.stringify(',' + label + ':')})`
      return `v = o[${label}]
      if (v !== undefined) {
        ${value}
        if (j !== undefined) out += ${prefix} + j
      }`
    })
    return `function ${name} (o) {
      if (typeof o !== 'object' || o === null || isArray(o) || typeof o.toJSON === 'function') return undefined
      let out = '{', v, j
      ${steps.join('\n')}
      return out + '}'
    }`
  }

  #array (name: string, schema: TSchema): string {
    const items = (schema as { items: TSchema }).items
    return `function ${name} (a) {
      if (!isArray(a)) return undefined
      let out = '[', v, j
      for (let i = 0; i < a.length; i++) {
        v = a[i]
        ${this.#value(items, "'' + i")}
        if (j === undefined) return undefined
        out += i === 0 ? j : ',' + j
      }
      return out + ']'
    }`
  }

  /**
   * Code setting `j` to the JSON of `v` (not undefined), or returning undefined when `v` is
   * not of the schema's type. Left undefined only where `JSON.stringify` gives none (a
   * function). `key` is the code of the key `v` is under, for a `toJSON`.
   */
  #value (schema: TSchema, key: string): string {
    switch (kindOf(schema)) {
      case 'string':
        return `if (typeof v !== 'string') return undefined
        j = quote(v)`
      case 'number':
        return `if (typeof v !== 'number') return undefined
        j = Number.isFinite(v) ? '' + v : 'null'`
      case 'boolean':
        return `if (typeof v !== 'boolean') return undefined
        j = v ? 'true' : 'false'`
      case 'object':
      case 'array':
        return `j = ${this.functionFor(schema)}(v)
        if (j === undefined) return undefined`
      case 'other':
        // Any JSON, as JSON.stringify writes it; its own toJSON gets the key it is under.
        return `j = typeof v === 'object' && v !== null && typeof v.toJSON === 'function' ? underKey(${key}, v) : JSON.stringify(v)`
    }
  }
}

/** The JSON of values of `schema`: the fields it names, in its order; `JSON.stringify`'s for any other value. */
export function compileSerializer (schema: TSchema): (value: unknown) => string {
  const kind = kindOf(schema)
  if (kind !== 'object' && kind !== 'array') return (value) => JSON.stringify(value)
  const generator = new Generator()
  const entry = generator.functionFor(schema)
  // Generated code, as TypeBox's Compile generates the validators: named property loads V8 caches.
  const fast = new Function(...Object.keys(runtime), `${generator.source}\nreturn ${entry}`)(...Object.values(runtime)) as Generated
  return (value) => fast(value) ?? JSON.stringify(value)
}

/** A stream's event: what SSE, WebSocket frames and push notifications carry. */
export const serializeStreamResponse = compileSerializer(StreamResponse)
