// lib/handler/deadlines.ts: one timer bounds every execution by the same timeout
// (executorTimeout); it is not armed again for every item, and stops once it finds nothing
// held, or at `close`. Real timers, short timeouts.
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { DeadlineQueue } from '../lib/handler/deadlines.js'
import { eventually } from './helpers/server.js'
import { liveTimeouts, timeoutsMadeIn } from './helpers/timers.js'

t.test('items still held at their time expire, in the order they were added; deleted ones never do', async t => {
  const expired: string[] = []
  const queue = new DeadlineQueue<string>(100, item => expired.push(item))
  const a = queue.add('a')
  const b = queue.add('b')
  queue.add('c')
  t.equal(queue.delete(b), true, 'b was held')
  t.equal(queue.delete(b), false, 'and is no longer')
  t.equal(queue.size, 2)
  await sleep(30)
  t.same(expired, [], 'nothing before its time')
  await sleep(220)
  t.same(expired, ['a', 'c'])
  t.equal(queue.size, 0)
  t.equal(queue.delete(a), false, 'an expired item is no longer held')
})

t.test('deleting the first, a middle and the last place keeps the others in order', async t => {
  const expired: number[] = []
  const queue = new DeadlineQueue<number>(60, item => expired.push(item))
  const places = [0, 1, 2, 3, 4, 5].map(item => queue.add(item))
  for (const index of [0, 3, 5]) queue.delete(places[index] as (typeof places)[number])
  t.equal(queue.size, 3)
  const last = queue.add(6)
  queue.delete(last)
  queue.add(7)
  t.same(places.map(place => place.held), [false, true, true, false, true, false])
  t.ok(places.every(place => !place.held ? place.previous === undefined && place.next === undefined : true), 'a place that left holds no neighbour')
  await sleep(120)
  t.same(expired, [1, 2, 4, 7])
  t.equal(queue.size, 0)
})

t.test('an item added after the first was deleted expires at its own time, not at the first one\'s', async t => {
  const timers = timeoutsMadeIn(t, 'lib/handler/deadlines.ts')
  /** Each item expired, with how many of the queue's timers had run out by then. */
  const expired: Array<[string, number]> = []
  const queue = new DeadlineQueue<string>(200, item => expired.push([item, timers.filter(timer => timer.fired).length]))
  const first = queue.add('first')
  await sleep(100)
  queue.delete(first)
  const second = queue.add('second')
  await eventually(() => expired.length === 1, 1000)
  t.equal(expired[0]?.[0], 'second')
  t.ok((expired[0]?.[1] ?? 0) >= 2, 'the timer armed for the first ran out, found nothing due and armed again')
  t.equal(expired[0]?.[1], timers.length, 'the item expired as the last timer ran out')
  t.equal(timers[0]?.delay, 200, 'the first timer was armed for the first item')
  // Armed for what was left of the second item's time: its due less the first timer's run (about
  // 100 ms); a timer that fires a little before its time arms one more for the rest.
  const later = timers.slice(1).map(timer => timer.delay)
  t.ok(later.every(delay => delay > 0 && delay < 200), `each later timer for the rest of the second item's time, not a whole timeout (${later.join(', ')} ms)`)
  t.equal(second.held, false)
})

t.test('items added while expiring ones are handed out wait for their own time', async t => {
  const expired: string[] = []
  const queue: DeadlineQueue<string> = new DeadlineQueue<string>(100, item => {
    expired.push(item)
    if (item === 'a') queue.add('added by a')
  })
  queue.add('a')
  await sleep(150)
  t.same(expired, ['a'])
  t.equal(queue.size, 1)
  await sleep(150)
  t.same(expired, ['a', 'added by a'])
})

const laterTurns = async () => {
  await new Promise(resolve => setImmediate(resolve))
  await new Promise(resolve => setImmediate(resolve))
}

t.test('one timer for many items, kept while the queue empties and fills: no timer per item', async t => {
  const live = liveTimeouts(t)
  const queue = new DeadlineQueue<number>(60_000, () => t.fail('nothing is due'))
  const places = Array.from({ length: 100 }, (_, item) => queue.add(item))
  t.equal(live.size, 1, 'one timer bounds the hundred items')
  for (const place of places) queue.delete(place)
  for (let item = 100; item < 200; item++) queue.delete(queue.add(item))
  await laterTurns()
  t.equal(queue.size, 0)
  t.equal(live.size, 1, 'the same timer, not cleared when the queue emptied nor armed again for the items after')
  queue.close()
  await laterTurns()
  t.equal(live.size, 0, 'close clears it')
  const next = queue.add(200)
  t.equal(live.size, 1, 'an item added after close arms it again')
  queue.delete(next)
  queue.close()
})

t.test('a timer that fires with nothing held stops: none is left behind', async t => {
  const live = liveTimeouts(t)
  const queue = new DeadlineQueue<string>(40, () => t.fail('nothing is due'))
  queue.delete(queue.add('a'))
  t.equal(live.size, 1, 'armed for a')
  await sleep(80)
  await laterTurns()
  t.equal(live.size, 0, 'it fired, found nothing and was not armed again')
  t.equal(queue.size, 0)
})
