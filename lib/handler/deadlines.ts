// One timeout for many items: the executions bounded by `executorTimeout`. Every item gets
// the same timeout, so they fall due in the order they were added, and one timer, armed for
// the first item still held, serves them all. A timer each would make a Timeout object and a
// timer-list entry per execution, and cancel it again when the execution returns in time.
// The timer is not cleared when the queue empties: a SendMessage answered at once empties it
// at every call, and clearing and arming a timer each time was about 1 % of the call's CPU
// (`--cpu-prof`). Left armed, it fires once, finds nothing held and stops; `close` clears it.
//
// The items are a list linked through their places, not a Map: a Map whose entries come and
// go in bursts is rehashed again and again, and V8 keeps a rehashed table pointing at its
// successor, holding the entries it had. Once one such table is in the old generation, every
// table after it, with the executions it held, is kept through the scavenges that follow and
// promoted: about a kilobyte a call was promoted that way, several times what the calls keep.
import { performance } from 'node:perf_hooks'

/** An item's place in the queue, from `add` until it is deleted or expires. */
export interface Deadline<T> {
  readonly item: T
  /** When it falls due, on the monotonic clock. */
  readonly due: number
  /** Its neighbours while it is held; cleared when it leaves, so a place left behind holds nothing. */
  previous: Deadline<T> | undefined
  next: Deadline<T> | undefined
  held: boolean
}

export class DeadlineQueue<T> {
  readonly #timeout: number
  readonly #expire: (item: T) => void
  /** The places held, in the order they were added (and so fall due). */
  #first: Deadline<T> | undefined
  #last: Deadline<T> | undefined
  #size = 0
  /**
   * Armed when an item is added and none is armed; it may fire for an item deleted since, and
   * then arms again for the first one held, or, with none, stops. Unref'd: a bound on work is
   * no reason to keep the process alive.
   */
  #timer: NodeJS.Timeout | undefined

  /** `expire` is called with each item still held `timeout` ms after it was added. */
  constructor (timeout: number, expire: (item: T) => void) {
    this.#timeout = timeout
    this.#expire = expire
  }

  get size (): number {
    return this.#size
  }

  /** Holds `item` until it is deleted or expires; its place is what `delete` takes. */
  add (item: T): Deadline<T> {
    // A monotonic clock: a wall clock set back would hold items past their time.
    const place: Deadline<T> = { item, due: performance.now() + this.#timeout, previous: this.#last, next: undefined, held: true }
    if (this.#last === undefined) this.#first = place
    else this.#last.next = place
    this.#last = place
    this.#size++
    // An armed timer is due no later than this item: it was armed for an item added earlier.
    if (this.#timer === undefined) this.#arm(this.#timeout)
    return place
  }

  /** Takes the item at `place` out; false when it is no longer held (it expired, or was deleted). */
  delete (place: Deadline<T>): boolean {
    if (!place.held) return false
    this.#unlink(place)
    return true
  }

  /** Clears the timer (the handler's app closed); items held stay held, and one added later arms it again. */
  close (): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #unlink (place: Deadline<T>): void {
    const { previous, next } = place
    if (previous === undefined) this.#first = next
    else previous.next = next
    if (next === undefined) this.#last = previous
    else next.previous = previous
    place.previous = undefined
    place.next = undefined
    place.held = false
    this.#size--
  }

  #arm (ms: number): void {
    this.#timer = setTimeout(this.#fire, ms)
    this.#timer.unref()
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    const now = performance.now()
    for (let place = this.#first; place !== undefined; place = this.#first) {
      if (place.due > now) {
        this.#arm(place.due - now)
        return
      }
      this.#unlink(place)
      this.#expire(place.item)
    }
  }
}
