// An event bus across instances on Redis pub/sub (ioredis). Listeners of this process
// are served synchronously, exactly as by the in-memory bus, so the handler's ordering
// guarantees hold locally; every event is also published on Redis, and events another
// instance published reach the local listeners of their topic in publication order.
import { randomUUID } from 'node:crypto';
import { MemoryEventBus } from './memory.js';
export class RedisEventBus {
    #local = new MemoryEventBus();
    #publisher;
    #subscriber;
    #prefix;
    /** Marks this instance's own messages, which its listeners already had. */
    #instance = randomUUID();
    /** Channels subscribed on Redis, with the promise of the subscription being active. */
    #channels = new Map();
    constructor(options) {
        this.#publisher = options.publisher;
        this.#subscriber = options.subscriber;
        this.#prefix = options.channelPrefix ?? 'a2a:events:';
        this.#subscriber.on('message', (channel, message) => {
            if (!channel.startsWith(this.#prefix))
                return;
            let sender;
            let event;
            try {
                [sender, event] = JSON.parse(message);
            }
            catch {
                return;
            }
            if (sender !== this.#instance)
                this.#local.publish(channel.slice(this.#prefix.length), event);
        });
    }
    publish(topic, event) {
        this.#local.publish(topic, event);
        this.#publisher.publish(this.#prefix + topic, JSON.stringify([this.#instance, event])).catch(() => { });
    }
    subscribe(topic, listener) {
        const unsubscribe = this.#local.subscribe(topic, listener);
        const channel = this.#prefix + topic;
        if (!this.#channels.has(channel))
            this.#channels.set(channel, this.#subscriber.subscribe(channel).catch(() => { }));
        return () => {
            unsubscribe();
            if (this.#local.listenerCount(topic) > 0)
                return;
            this.#channels.delete(channel);
            this.#subscriber.unsubscribe(channel).catch(() => { });
        };
    }
    /** Resolves once events other instances publish on `topic` reach this one's listeners. */
    async ready(topic) {
        await this.#channels.get(this.#prefix + topic);
    }
    listenerCount(topic) {
        return this.#local.listenerCount(topic);
    }
}
//# sourceMappingURL=redis.js.map