// The client's numeric options, checked where a transport is made (and a call's timeout
// where the call starts), so a typo fails at once, naming the option, instead of a timer
// that fires at once (setTimeout takes NaN, 0 and Infinity as 1 ms) or a cap that never holds.

/** setTimeout's longest delay (2³¹ − 1 ms): a longer timeout is none. */
export const MAX_TIMER = 2 ** 31 - 1

/** A timeout in ms: a positive number, or Infinity for none; undefined when unset. */
export function timeoutOption (name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !(value > 0)) throw new TypeError(`${name} must be a positive number of ms or Infinity; got ${String(value)}`)
  return value
}

/** A count or size: a positive integer, or Infinity for no limit; `fallback` when unset. */
export function limitOption (name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (value !== Infinity && !(Number.isSafeInteger(value) && value > 0)) throw new TypeError(`${name} must be a positive integer or Infinity; got ${String(value)}`)
  return value
}
