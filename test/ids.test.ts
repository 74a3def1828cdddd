// The ids the server makes (lib/ids.ts): RFC 9562 version-4 UUIDs, lowercase, each one new,
// across the refills of the random pool.
import t from 'tap'
import { newId } from '../lib/ids.js'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('every id is a version-4 UUID, and no id repeats across pool refills', async t => {
  // 4,096 ids per pool: 100,000 ids span two dozen refills.
  const seen = new Set<string>()
  let malformed = 0
  for (let i = 0; i < 100_000; i++) {
    const id = newId()
    if (!UUID_V4.test(id)) malformed++
    seen.add(id)
  }
  t.equal(malformed, 0)
  t.equal(seen.size, 100_000)
})

t.test('the random bits are spread: each hex position other than the fixed ones takes every value', async t => {
  const values = Array.from({ length: 36 }, () => new Set<string>())
  for (let i = 0; i < 5000; i++) {
    const id = newId()
    for (let at = 0; at < 36; at++) values[at]?.add(id[at] as string)
  }
  const counts = values.map(set => set.size)
  t.same(counts.filter((_, at) => [8, 13, 18, 23].includes(at)), [1, 1, 1, 1], 'the dashes')
  t.equal(counts[14], 1, 'the version nibble is always 4')
  t.equal(counts[19], 4, 'the variant nibble is one of 8, 9, a, b')
  t.ok(counts.every((count, at) => [8, 13, 14, 18, 19, 23].includes(at) || count === 16), 'every other position takes all 16 hex digits')
})

t.test('an id is a flat string of its own, not a view of a shared buffer', async t => {
  const first = newId()
  const copy = first.slice()
  newId()
  t.equal(first, copy, 'a later id does not change an earlier one')
})
