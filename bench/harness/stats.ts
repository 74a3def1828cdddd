// Repetitions and their medians.

/** Samples of one figure, in the order they were taken, and their median. */
export interface Figure {
  samples: number[]
  median: number
}

export function median (values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] as number : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

export function figure (samples: number[]): Figure {
  return { samples, median: median(samples) }
}

/** The value at `quantile` (0–1) of `values`, nearest rank. */
export function percentile (values: readonly number[], quantile: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(quantile * sorted.length) - 1))] as number
}

/** Collects the samples of several named figures over repetitions. */
export class Samples<Name extends string> {
  readonly #values = new Map<Name, number[]>()

  add (name: Name, value: number): void {
    const list = this.#values.get(name)
    if (list === undefined) this.#values.set(name, [value])
    else list.push(value)
  }

  figures (): Record<Name, Figure> {
    return Object.fromEntries([...this.#values].map(([name, values]) => [name, figure(values)])) as Record<Name, Figure>
  }
}
