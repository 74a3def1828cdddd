// lib/handler/steps.ts: a change yields store results; values come straight back, promises
// are awaited, a rejection is thrown into the change at its yield.
import t from 'tap'
import { awaiting, isPromise, runSteps, type Steps } from '../lib/handler/steps.js'

t.test('values only: the change runs to its end at once and returns its result, not a promise', async t => {
  const seen: unknown[] = []
  function * change (): Steps<string> {
    seen.push(yield 1)
    seen.push(yield 'two')
    return 'done'
  }
  const outcome = runSteps(change())
  t.equal(outcome, 'done')
  t.same(seen, [1, 'two'])
})

t.test('a promise makes the rest wait for it, in order, and the result a promise', async t => {
  const seen: unknown[] = []
  function * change (): Steps<number> {
    seen.push(yield 1)
    seen.push(yield Promise.resolve(2))
    seen.push(yield 3)
    return 4
  }
  const outcome = runSteps(change())
  t.ok(isPromise(outcome))
  t.same(seen, [1], 'nothing after the promise has run yet')
  t.equal(await outcome, 4)
  t.same(seen, [1, 2, 3])
})

t.test('a rejection is thrown into the change, which may catch it or let it go', async t => {
  function * catching (): Steps<string> {
    try {
      yield Promise.reject(new Error('store down'))
      return 'not reached'
    } catch (error) {
      return `caught ${(error as Error).message}`
    }
  }
  t.equal(await runSteps(catching()), 'caught store down')
  function * letting (): Steps<void> {
    yield Promise.reject(new Error('store down'))
  }
  await t.rejects(Promise.resolve(runSteps(letting())), { message: 'store down' })
  function * throwingAtOnce (): Steps<void> {
    yield 1
    throw new Error('invalid')
  }
  t.throws(() => runSteps(throwingAtOnce()), { message: 'invalid' }, 'a synchronous change throws synchronously')
})

t.test('awaiting: the work starts only when the change is run', async t => {
  let started = false
  const change = awaiting(async () => { started = true; return 7 })
  t.equal(started, false)
  t.equal(await runSteps(change), 7)
  t.equal(started, true)
})
