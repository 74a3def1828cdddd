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
