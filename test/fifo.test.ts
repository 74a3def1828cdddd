// lib/client/fifo.ts: the queue the client's stream buffer, the handler's change queue and the push
// delivery queues are drained through: order, what it keeps alive, and what draining copies.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { Fifo } from '../lib/client/fifo.js'

// gc() without --expose-gc on the command line: a flag set at run time, read in a new context.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Runs `body` with Array.prototype.slice and shift counted: the items slice copied, and shift's calls. */
function counted (body: () => void): { copied: number, shifts: number } {
  const { slice, shift } = Array.prototype
  const count = { copied: 0, shifts: 0 }
  Array.prototype.slice = function (this: unknown[], ...args: Parameters<typeof slice>) {
    const copy = slice.apply(this, args)
    count.copied += copy.length
    return copy
  }
  Array.prototype.shift = function (this: unknown[]) {
    count.shifts++
    return shift.call(this)
  }
  try {
    body()
  } finally {
    Array.prototype.slice = slice
    Array.prototype.shift = shift
  }
  return count
}

t.test('an empty queue has no length and shifts undefined', async t => {
  const fifo = new Fifo<number>()
  t.equal(fifo.length, 0)
  t.equal(fifo.shift(), undefined)
  fifo.push(1)
  t.equal(fifo.length, 1)
  t.equal(fifo.shift(), 1)
  t.equal(fifo.shift(), undefined)
  t.equal(fifo.length, 0)
})

t.test('items come out in the order they went in, pushed all first or between reads', async t => {
  const fifo = new Fifo<number>()
  const pushed: number[] = []
  const push = (item: number) => {
    fifo.push(item)
    pushed.push(item)
  }
  const read: number[] = []
  for (let i = 0; i < 100_000; i++) push(i)
  t.equal(fifo.length, 100_000)
  // Half read, then pushes and reads in turns, across the cuts, then the rest.
  for (let i = 0; i < 50_000; i++) read.push(fifo.shift() as number)
  for (let i = 0; i < 30_000; i++) {
    push(-i)
    read.push(fifo.shift() as number)
    if (i % 3 === 0) push(i + 0.5)
  }
  for (let item = fifo.shift(); item !== undefined; item = fifo.shift()) read.push(item)
  t.equal(fifo.length, 0)
  t.equal(read.length, pushed.length, 'none lost, none twice')
  t.ok(read.every((item, i) => item === pushed[i]), 'every item, in order')
})

t.test('draining copies each item at most once on average, and never calls Array.prototype.shift', async t => {
  // All pushed, then all read: the cuts copy half, a quarter, … of the items.
  const burst = counted(() => {
    const fifo = new Fifo<number>()
    for (let i = 0; i < 200_000; i++) fifo.push(i)
    for (let i = 0; i < 200_000; i++) fifo.shift()
  })
  t.equal(burst.shifts, 0)
  t.ok(burst.copied < 200_000, `a burst of 200,000 read: ${burst.copied} items copied`)
  // A queue that stays long, one in and one out: each cut copies what it holds, once in as many reads.
  const steady = counted(() => {
    const fifo = new Fifo<number>()
    for (let i = 0; i < 20_000; i++) fifo.push(i)
    for (let i = 0; i < 200_000; i++) {
      fifo.push(i)
      fifo.shift()
    }
  })
  t.equal(steady.shifts, 0)
  t.ok(steady.copied < 200_000, `200,000 reads of a queue 20,000 long: ${steady.copied} items copied`)
  // A short queue, often emptied, is never copied.
  const short = counted(() => {
    const fifo = new Fifo<number>()
    for (let i = 0; i < 100_000; i++) {
      fifo.push(i)
      fifo.push(i)
      fifo.shift()
      fifo.shift()
    }
  })
  t.same(short, { copied: 0, shifts: 0 })
})

t.test('an item read is not kept alive by the queue, before a cut or after', async t => {
  const fifo = new Fifo<{ index: number, payload: number[] }>()
  const refs: Array<WeakRef<object>> = []
  const pushOne = (index: number) => {
    const item = { index, payload: new Array(64).fill(index) }
    refs.push(new WeakRef(item))
    fifo.push(item)
  }
  for (let index = 0; index < 3000; index++) pushOne(index)
  // The reader keeps the index alone: what it read is then held by nothing of the test's.
  const readIndex = () => fifo.shift()?.index
  // 1,000 read: the head is short of a cut, the read slots still in the array.
  t.same(Array.from({ length: 1000 }, readIndex), Array.from({ length: 1000 }, (_, index) => index))
  await new Promise(resolve => setImmediate(resolve))
  gc()
  t.equal(refs.slice(0, 1000).filter(ref => ref.deref() !== undefined).length, 0, 'none of the 1,000 read is alive before a cut')
  t.equal(refs.slice(1000).filter(ref => ref.deref() === undefined).length, 0, 'every item not read is alive')
  // Past half: the array is cut.
  t.same(Array.from({ length: 1000 }, readIndex), Array.from({ length: 1000 }, (_, index) => 1000 + index))
  await new Promise(resolve => setImmediate(resolve))
  gc()
  t.equal(refs.slice(0, 2000).filter(ref => ref.deref() !== undefined).length, 0, 'none of the 2,000 read is alive after a cut')
  t.equal(refs.slice(2000).filter(ref => ref.deref() === undefined).length, 0, 'every item not read is alive')
  t.equal(fifo.length, 1000)
})

t.test('clear drops every item; the queue goes on after', async t => {
  const fifo = new Fifo<number>()
  for (let i = 0; i < 5000; i++) fifo.push(i)
  for (let i = 0; i < 2000; i++) fifo.shift()
  fifo.clear()
  t.equal(fifo.length, 0)
  t.equal(fifo.shift(), undefined)
  fifo.push(7)
  fifo.push(8)
  t.equal(fifo.length, 2)
  t.equal(fifo.shift(), 7)
  t.equal(fifo.shift(), 8)
})
