// Repetitions and their medians.
export function median(values) {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
export function figure(samples) {
    return { samples, median: median(samples) };
}
/** The value at `quantile` (0–1) of `values`, nearest rank. */
export function percentile(values, quantile) {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(quantile * sorted.length) - 1))];
}
/** Collects the samples of several named figures over repetitions. */
export class Samples {
    #values = new Map();
    add(name, value) {
        const list = this.#values.get(name);
        if (list === undefined)
            this.#values.set(name, [value]);
        else
            list.push(value);
    }
    figures() {
        return Object.fromEntries([...this.#values].map(([name, values]) => [name, figure(values)]));
    }
}
//# sourceMappingURL=stats.js.map