// A pause that an event can end early, for loops that re-check shared state (the store, the
// leases) now and then and as soon as something happened. A wake-up while no pause runs is kept
// for the next one, so none is lost between two checks.
export class Wakeup {
  #pending = false
  #resolve: (() => void) | undefined

  wake (): void {
    if (this.#resolve === undefined) this.#pending = true
    else this.#resolve()
  }

  /** Resolves after `ms`, or at the first wake-up (one since the last pause included). */
  async pause (ms: number): Promise<void> {
    if (this.#pending) {
      this.#pending = false
      return
    }
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>(resolve => {
      this.#resolve = resolve
      timer = setTimeout(resolve, ms)
    })
    clearTimeout(timer)
    this.#resolve = undefined
  }
}
