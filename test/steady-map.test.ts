// lib/steady-map.ts: a Map whose own padding keys never show; it answers as a Map would.
import t from 'tap'
import { SteadyMap } from '../lib/steady-map.js'

t.test('an empty map has no size and no values: the padding does not show', async t => {
  const map = new SteadyMap<string, number>()
  t.equal(map.size, 0)
  t.same([...map.values()], [])
  t.equal(map.get('a'), undefined)
  t.equal(map.delete('a'), false)
})

t.test('get, set, delete and values, in insertion order', async t => {
  const map = new SteadyMap<string, number>()
  map.set('a', 1)
  map.set('b', 2)
  map.set('c', 3)
  map.set('b', 20)
  t.equal(map.size, 3)
  t.equal(map.get('b'), 20, 'a set again replaces the value')
  t.same([...map.values()], [1, 20, 3], 'a key set again keeps its place')
  t.equal(map.delete('a'), true)
  t.equal(map.delete('a'), false, 'deleted once')
  t.equal(map.size, 2)
  t.same([...map.values()], [20, 3])
})

t.test('under churn, in bursts and one key at a time, it answers as a Map does', async t => {
  const map = new SteadyMap<string, number>()
  const reference = new Map<string, number>()
  let next = 0
  let mismatches = 0
  for (let round = 0; round < 200; round++) {
    // Bursts from 0 to 300 keys and back (past the padding and the table it keeps), then one at a time.
    const burst = round % 2 === 0 ? (round * 37) % 300 : 1
    const keys = Array.from({ length: burst }, () => `\u0000key-${next++}`)
    for (const key of keys) {
      map.set(key, next)
      reference.set(key, next)
    }
    const deleted = keys.filter((_, index) => index % 3 !== 0).map(key => [map.delete(key), reference.delete(key)])
    if (deleted.some(([ours, theirs]) => ours !== theirs) || map.size !== reference.size) mismatches++
    if (round % 50 === 0) t.same([...map.values()], [...reference.values()], `round ${round}: the same values in the same order`)
    for (const key of keys) {
      if (map.delete(key) !== reference.delete(key)) mismatches++
    }
  }
  t.equal(mismatches, 0, 'every delete answered as the Map\'s did, and the sizes matched')
  t.equal(map.size, 0)
  t.same([...map.values()], [])
})
