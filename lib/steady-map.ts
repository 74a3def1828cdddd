// A Map for keys that come and go with the calls: the handler's task runs, the memory bus's
// topics. V8 shrinks a Map's table, in the runtime and into a new table, whenever a delete
// leaves it less than a quarter full, and grows it again as keys come back: a Map that goes
// from empty to one key and back at every call makes a table every call (with the runs and the
// topics, 1–3 % of a SendMessage's CPU under perf). Sixty-four keys of its own that never
// leave keep the table from shrinking (it settles at 256 entries): it is then rebuilt only once
// its deleted entries fill it, every couple of hundred calls.
const PADDING = 64

/** Keys no caller has: the padding. They stay first in the Map's order, so iteration skips them by count. */
const PADS: ReadonlyArray<readonly [object, undefined]> = Array.from({ length: PADDING }, () => [Object.freeze({}), undefined] as const)

export class SteadyMap<K, V> {
  readonly #map = new Map<K | object, V | undefined>(PADS)

  get size (): number {
    return this.#map.size - PADDING
  }

  get (key: K): V | undefined {
    return this.#map.get(key)
  }

  set (key: K, value: V): void {
    this.#map.set(key, value)
  }

  delete (key: K): boolean {
    return this.#map.delete(key)
  }

  * values (): IterableIterator<V> {
    let skipped = 0
    for (const value of this.#map.values()) {
      if (skipped < PADDING) skipped++
      else yield value as V
    }
  }
}
