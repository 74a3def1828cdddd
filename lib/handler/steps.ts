// A change to a task written once for both kinds of store. It is a generator that yields
// what each store call returned: a value from a store that never waits (the memory
// store's immediate operations), a promise from any other. `runSteps` feeds values
// straight back, so with the memory store a whole change runs synchronously, without a
// promise, an async frame or a microtask per step; it awaits only what is a promise.

/** A change: yields store results, gets each one's value back, returns `T`. */
export type Steps<T> = Generator<unknown, T, any>

export type MaybePromise<T> = T | Promise<T>

export const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof (value as Promise<unknown> | undefined)?.then === 'function'

/** Runs `steps` to its end: synchronously while nothing yielded is a promise; a promise from then on. */
export function runSteps<T> (steps: Steps<T>): MaybePromise<T> {
  let next = steps.next()
  while (next.done !== true) {
    if (isPromise(next.value)) return finish(steps, next.value)
    next = steps.next(next.value)
  }
  return next.value
}

async function finish<T> (steps: Steps<T>, pending: Promise<unknown>): Promise<T> {
  let yielded: unknown = pending
  for (;;) {
    let value: unknown
    let failure: { error: unknown } | undefined
    try {
      value = await yielded
    } catch (error) {
      failure = { error }
    }
    // A rejection is thrown into the change at its yield, where it may catch it.
    const next = failure === undefined ? steps.next(value) : steps.throw(failure.error)
    if (next.done === true) return next.value
    yielded = next.value
  }
}

/** An async piece of work as a change: it starts when the change's turn comes, and the change ends with it. */
export function * awaiting<T> (work: () => Promise<T>): Steps<T> {
  return yield work()
}
