// The queue between the bus and a stream's reader (lib/handler/event-queue.ts): what it
// hands on, in order, and what it keeps once handed on.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { EventQueue } from '../lib/handler/event-queue.js'

// gc() without --expose-gc on the command line: a flag set at run time, read in a new context.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

t.test('an event the reader has taken is not kept by the queue while the stream stays open', async t => {
  const queue = new EventQueue<{ index: number, payload: number[] }>(64)
  const refs: Array<WeakRef<object>> = []
  // A reader one event behind: the queue never empties, as with a reader slower than the executor.
  const pushOne = (index: number) => {
    const event = { index, payload: new Array(256).fill(index) }
    refs.push(new WeakRef(event))
    queue.push(event)
  }
  // The reader keeps the index alone: what it read is then held by nothing of the test's.
  const readIndex = async () => (await queue.next()).value?.index
  const read: Array<number | undefined> = []
  pushOne(0)
  for (let index = 1; index <= 500; index++) {
    pushOne(index)
    read.push(await readIndex())
  }
  t.same(read, Array.from({ length: 500 }, (_, index) => index))
  t.equal(queue.buffered, 1)
  // Let the last read go out of scope of this frame and collect.
  await new Promise(resolve => setImmediate(resolve))
  gc()
  const alive = refs.map((ref, index) => ref.deref() === undefined ? -1 : index).filter(index => index !== -1)
  t.same(alive, [500], 'only the event not yet read is alive')
  t.equal(await readIndex(), 500)
  queue.end()
  t.same(await queue.next(), { value: undefined, done: true })
})

t.test('a long backlog read to the end hands every event on in order', async t => {
  const queue = new EventQueue<number>(5000)
  for (let index = 0; index < 3000; index++) queue.push(index)
  const read: number[] = []
  for (let index = 0; index < 3000; index++) read.push((await queue.next()).value as number)
  t.same(read, Array.from({ length: 3000 }, (_, index) => index))
  t.equal(queue.buffered, 0)
  queue.push(3000)
  t.same(await queue.next(), { value: 3000, done: false })
})
