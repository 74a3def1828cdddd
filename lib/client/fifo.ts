// A first-in first-out queue for queues that may grow long. V8's Array.prototype.shift()
// copies the whole array once it holds more than about 16K items, so draining a long array
// with it is O(n²); here a head index walks the array instead. Each slot is cleared as it is
// read, so nothing read stays alive. Once the head is past half the array (and past
// COMPACT_AT, so a short queue is not copied every few reads) what is left goes to a new
// array: fewer items than were read since the last copy, so O(1) a read. `undefined` is not
// an item: shift() answers it for an empty queue.
//
// It lives with the client, which a browser loads as plain modules from its own folder (it
// may import nothing outside it); the server's long queues (a task's changes, push
// deliveries) use it too.
const COMPACT_AT = 1024

export class Fifo<T> {
  #items: Array<T | undefined> = []
  #head = 0

  get length (): number {
    return this.#items.length - this.#head
  }

  push (item: T): void {
    this.#items.push(item)
  }

  /** The oldest item, taken out; undefined when the queue is empty. */
  shift (): T | undefined {
    if (this.#head === this.#items.length) return undefined
    const item = this.#items[this.#head]
    this.#items[this.#head++] = undefined
    if (this.#head === this.#items.length) {
      // Emptied: the array starts over, with no copy.
      this.#items.length = 0
      this.#head = 0
    } else if (this.#head > COMPACT_AT && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
    return item
  }

  /** Drops every item. */
  clear (): void {
    this.#items.length = 0
    this.#head = 0
  }
}
