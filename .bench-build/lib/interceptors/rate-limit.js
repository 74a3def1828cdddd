import LocalStore from '@fastify/rate-limit/store/LocalStore.js';
import RedisStore from '@fastify/rate-limit/store/RedisStore.js';
import { RateLimitedError, retryInfo } from '../errors/index.js';
function callerKey(context, request) {
    const subject = context.identity?.subject;
    if (typeof subject === 'string' && subject !== '')
        return `id:${subject}`;
    return `ip:${request?.ip ?? 'unknown'}`;
}
/** The counting of `rateLimit`, also used for the a2a.v1 WebSocket dialect's message limit. */
export function windowCounter(options) {
    const timeWindow = options.timeWindow ?? 60_000;
    const { max } = options;
    const store = options.store ??
        (options.redis !== undefined ? new RedisStore(false, false, options.redis, 'fastify-a2a-rate-limit-') : new LocalStore(false, false, 5000));
    return {
        max,
        timeWindow,
        count: (key) => new Promise((resolve, reject) => {
            store.incr(key, (error, result) => {
                if (error !== null || result === undefined) {
                    reject(error ?? new Error('the rate-limit store gave no count'));
                    return;
                }
                // LocalStore hands back its live record: calls counted in the same tick (frames of
                // one TCP read) would all read the last count. Each call keeps its own.
                resolve({ current: result.current, ttl: result.ttl });
            }, timeWindow, max);
        })
    };
}
export function rateLimit(options) {
    const counter = windowCounter(options);
    const keyOf = options.keyGenerator ?? callerKey;
    return {
        async before(context, call) {
            const { current, ttl } = await counter.count(keyOf(context, call.request));
            if (current > counter.max)
                throw new RateLimitedError(counter.max, counter.timeWindow).with({ details: [retryInfo(ttl)] });
        }
    };
}
//# sourceMappingURL=rate-limit.js.map