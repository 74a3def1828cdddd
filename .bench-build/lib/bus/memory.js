export class MemoryEventBus {
    #topics = new Map();
    #count = 0;
    publish(topic, event) {
        const listeners = this.#topics.get(topic);
        if (listeners === undefined)
            return;
        for (const listener of listeners)
            listener(event);
    }
    subscribe(topic, listener) {
        let listeners = this.#topics.get(topic);
        if (listeners === undefined)
            this.#topics.set(topic, listeners = new Set());
        // Wrapped so the same function can subscribe twice and be removed once per call.
        const entry = (event) => listener(event);
        listeners.add(entry);
        this.#count++;
        let subscribed = true;
        return () => {
            if (!subscribed)
                return;
            subscribed = false;
            this.#count--;
            listeners.delete(entry);
            if (listeners.size === 0)
                this.#topics.delete(topic);
        };
    }
    listenerCount(topic) {
        return topic === undefined ? this.#count : (this.#topics.get(topic)?.size ?? 0);
    }
}
//# sourceMappingURL=memory.js.map