// Copies made for adding keys to. V8 in Node 20 gives an object made by a spread followed
// by keys the source lacks (`{ ...a, b }`, `{ ...a, ...b }`) a hidden class of its own every
// time: about a microsecond a key on this machine, and every later read of such an object
// is megamorphic. Built key by key, the copies share their hidden classes.

import type { Artifact } from './schema/wire.js'

type Keyed = Record<PropertyKey, unknown>

/**
 * Adds `source`'s own enumerable string keys to `target` as a spread would; an own
 * `__proto__` key (JSON.parse makes one) stays a key and does not set the prototype. With
 * `keepOwn`, a key `target` has already keeps its value. Symbol keys are not copied: what is
 * copied here is wire data (messages, artifacts, service parameters), which JSON gives none
 * of and sends none of, and asking for them is a call into the runtime each time (2 % of the
 * handler's CPU in one process; with lib/bus/topic.ts about 1 % of an HTTP SendMessage's:
 * bench/HISTORY.md, forty-seventh round).
 */
export function spreadInto (target: Keyed, source: object, keepOwn = false): Keyed {
  const from = source as Keyed
  for (const key of Object.keys(from)) {
    if (keepOwn && Object.hasOwn(target, key)) continue
    if (key === '__proto__') Object.defineProperty(target, key, { value: from[key], writable: true, enumerable: true, configurable: true })
    else target[key] = from[key]
  }
  return target
}

/** `{ ...source }` (its string keys), to add keys to. */
export function copyOwn (source: object): Keyed {
  return spreadInto({}, source)
}

/** `{ ...base, ...over }` (their string keys). */
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

/**
 * An artifact that grows apart from `artifact`: its own `parts` and `metadata`, which the
 * memory store appends to and merges into in place (the store's copy of an event's artifact,
 * and a snapshot of a live task's).
 */
export function copyArtifact (artifact: Artifact): Artifact {
  const copy = { ...artifact, parts: artifact.parts.slice() }
  if (artifact.metadata !== undefined) copy.metadata = copyOwn(artifact.metadata)
  return copy
}
