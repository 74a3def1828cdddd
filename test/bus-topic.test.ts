// lib/bus/topic.ts: a task's topic, one per tenant and task id.
import t from 'tap'
import fc from 'fast-check'
import { topicOf } from '../lib/bus/topic.js'
import { newId } from '../lib/ids.js'

t.test('the default tenant\'s topic is the task id itself', async t => {
  const id = newId()
  t.equal(topicOf('', id), id)
})

t.test('any other topic: the tenant\'s length, a NUL, the tenant, the id', async t => {
  t.equal(topicOf('acme', 'task-1'), '4\u0000acmetask-1')
  t.equal(topicOf('a\u0000b', 'c'), '3\u0000a\u0000bc')
  t.equal(topicOf('', 'a\u0000b'), '0\u0000a\u0000b', 'a default-tenant id holding a NUL takes this form, tenant length 0')
})

t.test('no two (tenant, task id) pairs share a topic', async t => {
  // Pairs a plain `${tenant}\0${id}` would have joined into one topic.
  t.not(topicOf('a\u0000b', 'c'), topicOf('a', 'b\u0000c'))
  t.not(topicOf('', '1\u0000ab'), topicOf('a', 'b'))
  t.not(topicOf('1', 'x'), topicOf('', '1\u0000\u00001x'))
  // Every pair over a small alphabet of the characters that matter: digits, NUL, letters.
  const text = fc.string({ unit: fc.constantFrom('0', '1', '\u0000', 'a'), maxLength: 5 })
  const pair = fc.tuple(text, text)
  fc.assert(fc.property(pair, pair, ([tenant, id], [otherTenant, otherId]) =>
    (tenant === otherTenant && id === otherId) === (topicOf(tenant, id) === topicOf(otherTenant, otherId))), { numRuns: 20_000 })
  t.pass('20,000 pairs of pairs: equal topics exactly when the pairs are equal')
})
