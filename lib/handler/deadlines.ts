// One timeout for many items: the executions bounded by `executorTimeout`. Every item gets
// the same timeout, so they fall due in the order they were added, and one timer, armed for
// the first item still held, serves them all while any is held. A timer each would make a
// Timeout object and a timer-list entry per execution, and cancel it again when the
// execution returns in time.
import { performance } from 'node:perf_hooks'

export class DeadlineQueue<T> {
  readonly #timeout: number
  readonly #expire: (item: T) => void
  /** The items held, in the order they were added (and so fall due), with the time they do. */
  readonly #due = new Map<T, number>()
  /**
   * Armed while an item is held, cleared when the last one goes: a handler whose work is done
   * leaves no timer behind. It may fire for an item deleted since, and then arms again.
   */
  #timer: NodeJS.Timeout | undefined

  /** `expire` is called with each item still held `timeout` ms after it was added. */
  constructor (timeout: number, expire: (item: T) => void) {
    this.#timeout = timeout
    this.#expire = expire
  }

  get size (): number {
    return this.#due.size
  }

  add (item: T): void {
    // A monotonic clock: a wall clock set back would hold items past their time.
    this.#due.set(item, performance.now() + this.#timeout)
    // An armed timer is due no later than this item: it was armed for an item added earlier.
    if (this.#timer === undefined) this.#arm(this.#timeout)
  }

  /** Takes `item` out; false when it is not held (it expired, or was never added). */
  delete (item: T): boolean {
    if (!this.#due.delete(item)) return false
    if (this.#due.size === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer)
      this.#timer = undefined
    }
    return true
  }

  #arm (ms: number): void {
    this.#timer = setTimeout(this.#fire, ms)
    // A bound on work is no reason to keep the process alive.
    this.#timer.unref()
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    const now = performance.now()
    for (const [item, due] of this.#due) {
      if (due > now) {
        this.#arm(due - now)
        return
      }
      this.#due.delete(item)
      this.#expire(item)
    }
  }
}
