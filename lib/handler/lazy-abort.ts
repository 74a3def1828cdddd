// An AbortController made only when its signal is asked for: most executions never read
// `context.signal` nor get aborted, and a Node AbortController costs microseconds to make.

export class LazyAbortController {
  #controller: AbortController | undefined
  #aborted = false

  get aborted (): boolean {
    return this.#aborted
  }

  /** The signal, aborted already when abort() came first. */
  get signal (): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort()
    }
    return this.#controller.signal
  }

  abort (): void {
    this.#aborted = true
    this.#controller?.abort()
  }
}
