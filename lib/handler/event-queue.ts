// The stream a dispatcher reads: an async iterator fed by the event bus. Its buffer is
// bounded; a reader that falls further behind than the bound has its stream ended
// with StreamLagged rather than holding events without limit.
import { StreamLaggedError } from '../errors/index.js'

export class EventQueue<T> implements AsyncIterableIterator<T> {
  /**
   * A head index over an array, not the client's Fifo: a stream's queue empties at nearly every
   * event, and the Fifo gives an emptied queue a new array, whose first push then allocates.
   */
  #items: T[] = []
  #head = 0
  #waiting: { resolve: (result: IteratorResult<T>) => void, reject: (error: unknown) => void } | undefined
  #ended = false
  #closed = false
  #error: unknown
  readonly #maxBuffered: number
  readonly #onClose: Array<() => void> = []

  constructor (maxBuffered: number) {
    this.#maxBuffered = maxBuffered
  }

  /** Runs `cleanup` once when the stream ends for any reason (end, failure, the reader leaving). */
  onClose (cleanup: () => void): void {
    if (this.#closed) cleanup()
    else this.#onClose.push(cleanup)
  }

  get buffered (): number {
    return this.#items.length - this.#head
  }

  push (item: T): void {
    if (this.#ended) return
    const waiting = this.#waiting
    if (waiting !== undefined) {
      this.#waiting = undefined
      waiting.resolve({ value: item, done: false })
      return
    }
    if (this.buffered >= this.#maxBuffered) {
      // What is buffered is dropped with the stream: the reader is told how much it lost.
      const dropped = this.buffered + 1
      this.#items = []
      this.#head = 0
      this.fail(new StreamLaggedError(dropped).with({ metadata: { droppedEvents: String(dropped) } }))
      return
    }
    this.#items.push(item)
  }

  /** No more items: the reader gets what is buffered, then the end. */
  end (): void {
    if (this.#ended) return
    this.#ended = true
    this.#close()
    this.#settleWaiting()
  }

  /** The stream fails: the reader gets what is buffered, then the error. */
  fail (error: unknown): void {
    if (this.#ended) return
    this.#ended = true
    this.#error = error
    this.#close()
    this.#settleWaiting()
  }

  next (): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head] as T
      // Let go of at once: a reader a little behind would otherwise keep up to 1,024 events
      // it has read alive, whatever the bound, until the array is cut.
      (this.#items as Array<T | undefined>)[this.#head++] = undefined
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head)
        this.#head = 0
      }
      return Promise.resolve({ value, done: false })
    }
    if (this.#ended) {
      if (this.#error !== undefined) {
        const error = this.#error
        this.#error = undefined
        return Promise.reject(error)
      }
      return Promise.resolve({ value: undefined, done: true })
    }
    return new Promise((resolve, reject) => { this.#waiting = { resolve, reject } })
  }

  /** The reader leaves: the subscription is released. */
  return (): Promise<IteratorResult<T>> {
    this.#items = []
    this.#head = 0
    this.#error = undefined
    this.end()
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator] (): this {
    return this
  }

  #settleWaiting (): void {
    const waiting = this.#waiting
    if (waiting === undefined) return
    this.#waiting = undefined
    if (this.#error !== undefined) {
      const error = this.#error
      this.#error = undefined
      waiting.reject(error)
    } else {
      waiting.resolve({ value: undefined, done: true })
    }
  }

  #close (): void {
    if (this.#closed) return
    this.#closed = true
    for (const cleanup of this.#onClose.splice(0)) cleanup()
  }
}
