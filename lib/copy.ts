// Copies made for adding keys to. V8 in Node 20 gives an object made by a spread followed
// by keys the source lacks (`{ ...a, b }`, `{ ...a, ...b }`) a hidden class of its own every
// time: about a microsecond a key on this machine, and every later read of such an object
// is megamorphic. Built key by key, the copies share their hidden classes.

type Keyed = Record<PropertyKey, unknown>

/**
 * Adds `source`'s keys to `target` as a spread would: own enumerable string keys, then
 * enumerable symbols; an own `__proto__` key (JSON.parse makes one) stays a key and does
 * not set the prototype. With `keepOwn`, a key `target` has already keeps its value.
 */
function spreadInto (target: Keyed, source: object, keepOwn = false): Keyed {
  const from = source as Keyed
  for (const key of Object.keys(from)) {
    if (keepOwn && Object.hasOwn(target, key)) continue
    if (key === '__proto__') Object.defineProperty(target, key, { value: from[key], writable: true, enumerable: true, configurable: true })
    else target[key] = from[key]
  }
  for (const symbol of Object.getOwnPropertySymbols(from)) {
    if (keepOwn && Object.hasOwn(target, symbol)) continue
    if (Object.prototype.propertyIsEnumerable.call(from, symbol)) target[symbol] = from[symbol]
  }
  return target
}

/** `{ ...source }`, to add keys to. */
export function copyOwn (source: object): Keyed {
  return spreadInto({}, source)
}

/** `{ ...base, ...over }`. */
export function merged<T extends object, U extends object> (base: T, over: U): T & U {
  return spreadInto(spreadInto({}, base), over) as T & U
}

/**
 * `{ ...source, ...base }`, built from `base`: a literal of the keys such objects usually
 * have, so that every copy shares its hidden class and holds those keys in the object
 * itself (a copy into `{}` keeps only four there and puts the rest in a second array).
 * `source`'s other keys follow, in their order.
 */
export function over<T extends object> (base: T, source: object): T {
  return spreadInto(base as Keyed, source, true) as T
}
