// A push-fed async iterator: a transport pushes a stream's events as they arrive and
// ends or fails it; the reader pulls. A failure is thrown once, after the events queued
// before it; from then on, and after an end or a return, the iterator is done.
import { Fifo } from './fifo.js'

export class Channel<T> implements AsyncIterableIterator<T> {
  /** A Fifo: the buffer grows without bound while the reader is slower than the socket. */
  readonly #items = new Fifo<T>()
  #state: 'open' | 'ended' | 'failed' = 'open'
  /** The failure not yet thrown to the reader. */
  #error: { value: unknown } | undefined
  /** Readers waiting, oldest first: `next()` may be called again before the last one settled. */
  readonly #waiters: Array<{ resolve (result: IteratorResult<T>): void, reject (error: unknown): void }> = []
  readonly #onStop: () => void

  /** `onStop` runs once when the reader stops a stream that is still open (return). */
  constructor (onStop: () => void) {
    this.#onStop = onStop
  }

  /** A stream refused before it started: its reader gets `error` from the first `next()`. */
  static failed<T> (error: unknown): Channel<T> {
    const refused = new Channel<T>(() => {})
    refused.fail(error)
    return refused
  }

  /** Has the stream ended or failed, whether or not the reader has seen it yet? */
  get closed (): boolean {
    return this.#state !== 'open'
  }

  push (item: T): void {
    if (this.closed) return
    const waiter = this.#waiters.shift()
    if (waiter !== undefined) waiter.resolve({ value: item, done: false })
    else this.#items.push(item)
  }

  end (): void {
    if (this.closed) return
    this.#state = 'ended'
    this.#wake()
  }

  /** Fails the stream: the events queued so far are read first, then `error` is thrown. */
  fail (error: unknown): void {
    if (this.closed) return
    this.#state = 'failed'
    this.#error = { value: error }
    this.#wake()
  }

  /** Fails the stream at once, dropping the events queued (an abort). */
  abort (error: unknown): void {
    if (this.closed) return
    this.#items.clear()
    this.fail(error)
  }

  next (): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift() as T, done: false })
    const error = this.#takeError()
    if (error !== undefined) return Promise.reject(error.value)
    if (this.closed) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve, reject) => { this.#waiters.push({ resolve, reject }) })
  }

  return (): Promise<IteratorResult<T>> {
    const stoppedEarly = !this.closed
    this.#items.clear()
    this.#error = undefined
    if (stoppedEarly) this.#state = 'ended'
    this.#wake()
    if (stoppedEarly) this.#onStop()
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator] (): AsyncIterableIterator<T> {
    return this
  }

  #takeError (): { value: unknown } | undefined {
    const error = this.#error
    this.#error = undefined
    return error
  }

  /** Readers waiting can only be waiting on an empty queue: the first gets the failure, if any, and every one the end. */
  #wake (): void {
    for (const waiter of this.#waiters.splice(0)) {
      const error = this.#takeError()
      if (error !== undefined) waiter.reject(error.value)
      else waiter.resolve({ value: undefined, done: true })
    }
  }
}
