// lib/bus/memory.ts, the bus of one process: listeners per topic, each subscription removed
// once, and a publish that goes on over the listeners it started with.
import t from 'tap'
import { MemoryEventBus, type StreamResponse } from '../lib/index.js'

const event = (text: string): StreamResponse => ({ message: { messageId: text, role: 'ROLE_AGENT', parts: [{ text }] } })

t.test('a topic\'s listeners get its events with their versions, in the order they subscribed; other topics none', async t => {
  const bus = new MemoryEventBus()
  const seen: string[] = []
  bus.subscribe('one', (e, version) => seen.push(`first ${e.message?.messageId} ${version}`))
  bus.subscribe('one', (e, version) => seen.push(`second ${e.message?.messageId} ${version}`))
  bus.subscribe('two', () => seen.push('two'))
  bus.publish('one', event('x'), 3)
  bus.publish('none', event('y'))
  t.same(seen, ['first x 3', 'second x 3'])
  t.equal(bus.listenerCount('one'), 2)
  t.equal(bus.listenerCount(), 3)
})

t.test('the same function subscribed twice is called twice; each unsubscribe removes one place, once', async t => {
  const bus = new MemoryEventBus()
  let calls = 0
  const listener = () => { calls++ }
  const first = bus.subscribe('topic', listener)
  bus.subscribe('topic', listener)
  bus.publish('topic', event('a'))
  t.equal(calls, 2)
  first()
  first()
  t.equal(bus.listenerCount('topic'), 1, 'a second call of the same unsubscribe does nothing')
  bus.publish('topic', event('b'))
  t.equal(calls, 3)
  t.equal(bus.listenerCount(), 1)
})

t.test('a listener that unsubscribes during a publish skips no other; one subscribed meanwhile gets the next event', async t => {
  const bus = new MemoryEventBus()
  const seen: string[] = []
  let late: (() => void) | undefined
  const off = bus.subscribe('topic', (e) => {
    seen.push(`first ${e.message?.messageId}`)
    off()
    late ??= bus.subscribe('topic', (e) => seen.push(`late ${e.message?.messageId}`))
  })
  bus.subscribe('topic', (e) => seen.push(`second ${e.message?.messageId}`))
  bus.publish('topic', event('a'))
  bus.publish('topic', event('b'))
  t.same(seen, ['first a', 'second a', 'second b', 'late b'])
  late?.()
  t.equal(bus.listenerCount('topic'), 1)
})

t.test('the last unsubscribe drops the topic', async t => {
  const bus = new MemoryEventBus()
  const off = bus.subscribe('topic', () => {})
  off()
  t.equal(bus.listenerCount('topic'), 0)
  t.equal(bus.listenerCount(), 0)
  bus.publish('topic', event('nobody'))
})

/**
 * Arrays copied or gone over whole while `run` runs: calls of the Array methods a copy is made
 * with (slice, filter, concat, and the iterator a spread or Array.from reads).
 */
function arrayCopies (run: () => void): number {
  const proto = Array.prototype as unknown as Record<PropertyKey, (...args: unknown[]) => unknown>
  const names: PropertyKey[] = ['slice', 'filter', 'concat', Symbol.iterator]
  const originals = names.map(name => proto[name] as (...args: unknown[]) => unknown)
  let copies = 0
  names.forEach((name, i) => {
    const original = originals[i] as (...args: unknown[]) => unknown
    proto[name] = function (this: unknown, ...args: unknown[]) { copies++; return original.apply(this, args) }
  })
  try {
    run()
  } finally {
    names.forEach((name, i) => { proto[name] = originals[i] as (...args: unknown[]) => unknown })
  }
  return copies
}

t.test('many listeners on one topic: subscribing and unsubscribing copy no array; removals during a publish copy it once', async t => {
  const bus = new MemoryEventBus()
  const count = 1000
  const seen: number[] = []
  const offs: Array<() => void> = []
  const subscribed = arrayCopies(() => {
    for (let i = 0; i < count; i++) offs.push(bus.subscribe('topic', () => { seen.push(i); offs[i]?.() }))
  })
  t.equal(subscribed, 0, `${count} subscribes`)
  const unsubscribed = arrayCopies(() => {
    for (let i = 0; i < count; i += 2) offs[i]?.()
  })
  t.equal(unsubscribed, 0, `${count / 2} unsubscribes, from the front to the back`)
  t.equal(bus.listenerCount('topic'), count / 2)
  // Each listener left unsubscribes itself as it gets the event.
  t.equal(arrayCopies(() => bus.publish('topic', event('last'))), 1, 'a publish whose every listener leaves during it')
  t.same(seen, Array.from({ length: count / 2 }, (_, i) => 2 * i + 1), 'the listeners left, once each, in the order they subscribed')
  t.equal(bus.listenerCount('topic'), 0)
  t.equal(bus.listenerCount(), 0)
})

t.test('a listener removed during a publish still gets that event, not the next; the order holds after removals', async t => {
  const bus = new MemoryEventBus()
  const seen: string[] = []
  const offs = new Map<string, () => void>()
  for (const name of ['a', 'b', 'c', 'd', 'e']) {
    offs.set(name, bus.subscribe('topic', (e) => {
      seen.push(`${name} ${e.message?.messageId}`)
      if (name === 'b') offs.get('d')?.()
    }))
  }
  bus.publish('topic', event('1'))
  t.same(seen, ['a 1', 'b 1', 'c 1', 'd 1', 'e 1'], 'd, removed by b, had the event under way')
  seen.length = 0
  offs.get('a')?.()
  bus.subscribe('topic', (e) => seen.push(`f ${e.message?.messageId}`))
  bus.publish('topic', event('2'))
  t.same(seen, ['b 2', 'c 2', 'e 2', 'f 2'])
  t.equal(bus.listenerCount('topic'), 4)
})

t.test('a lone listener that subscribes another and leaves during a publish: the other gets the next event only', async t => {
  const bus = new MemoryEventBus()
  const seen: string[] = []
  const off = bus.subscribe('topic', (e) => {
    seen.push(`lone ${e.message?.messageId}`)
    bus.subscribe('topic', (e) => seen.push(`next ${e.message?.messageId}`))
    off()
  })
  bus.publish('topic', event('a'))
  bus.publish('topic', event('b'))
  t.same(seen, ['lone a', 'next b'])
  t.equal(bus.listenerCount('topic'), 1)
})

t.test('a listener that publishes again on its topic: the inner publish reaches the listeners subscribed by then', async t => {
  const bus = new MemoryEventBus()
  const seen: string[] = []
  bus.subscribe('topic', (e) => {
    seen.push(`first ${e.message?.messageId}`)
    if (e.message?.messageId !== 'outer') return
    bus.subscribe('topic', (e) => seen.push(`late ${e.message?.messageId}`))
    bus.publish('topic', event('inner'))
  })
  bus.subscribe('topic', (e) => seen.push(`second ${e.message?.messageId}`))
  bus.publish('topic', event('outer'))
  t.same(seen, ['first outer', 'first inner', 'second inner', 'late inner', 'second outer'])
})

t.test('a listener that throws ends the publish with its error; the bus goes on as before', async t => {
  const bus = new MemoryEventBus()
  const seen: string[] = []
  const off = bus.subscribe('topic', () => { throw new Error('listener failed') })
  const others = [bus.subscribe('topic', () => seen.push('second')), bus.subscribe('topic', () => seen.push('third'))]
  t.throws(() => bus.publish('topic', event('x')), { message: 'listener failed' })
  t.same(seen, [])
  t.equal(arrayCopies(() => off()), 0, 'no publish is under way any more: the array is changed in place')
  bus.publish('topic', event('y'))
  t.same(seen, ['second', 'third'])
  for (const unsubscribe of others) unsubscribe()
  t.equal(bus.listenerCount(), 0)
})
