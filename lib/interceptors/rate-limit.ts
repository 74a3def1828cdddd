// Built-in rate limiting: a fixed window per caller (its identity, else its IP), on
// every call of every binding and every WebSocket frame. Counters live in a store of
// @fastify/rate-limit's interface: its LocalStore by default, its RedisStore (or any
// store of that shape) to share one budget across instances.
import type { FastifyRequest } from 'fastify'
import LocalStore from '@fastify/rate-limit/store/LocalStore.js'
import RedisStore from '@fastify/rate-limit/store/RedisStore.js'
import { RateLimitedError, retryInfo } from '../errors/index.js'
import type { CallContext } from '../handler/executor.js'
import type { A2AInterceptor, InterceptedCall } from './types.js'

/** @fastify/rate-limit's store interface. */
export interface RateLimitStore {
  incr (key: string, callback: (error: Error | null, result?: { current: number, ttl: number }) => void, timeWindow: number, max: number): void
}

/** Callers the default in-memory store counts at once. */
export const DEFAULT_CACHE_SIZE = 5000
/** How long a call waits for its count in `rateLimit`'s store by default, in ms. */
export const DEFAULT_STORE_TIMEOUT = 1000

export interface RateLimitOptions {
  /** Calls allowed per caller per window. */
  max: number
  /** The window, in ms. Default 60,000. */
  timeWindow?: number
  /** A store of @fastify/rate-limit's interface. Default: its in-memory LocalStore. */
  store?: RateLimitStore
  /** An ioredis client: counters in Redis through @fastify/rate-limit's RedisStore. */
  redis?: unknown
  /**
   * Callers the default in-memory store counts at once; past it the one counted least recently
   * is forgotten, and its budget starts over. Not with `store` or `redis`. Default 5,000.
   */
  cacheSize?: number
  /** The caller's key. Default: the identity's subject, else the client IP. */
  keyGenerator?: (context: CallContext, request: FastifyRequest | undefined) => string
  /**
   * How long a call waits for the store's count, in ms; past it (Redis out of reach or
   * stalled) the call is Unavailable, with a RetryInfo. 0 = no end. Default 1,000.
   */
  storeTimeout?: number
}

function callerKey (context: CallContext, request: FastifyRequest | undefined): string {
  const subject = (context.identity as { subject?: unknown } | undefined)?.subject
  if (typeof subject === 'string' && subject !== '') return `id:${subject}`
  return `ip:${request?.ip ?? 'unknown'}`
}

/** A fixed-window count per key in a store of @fastify/rate-limit's interface. */
export interface WindowCounter {
  readonly max: number
  readonly timeWindow: number
  /** Counts one more for `key` and gives its count in the current window. */
  count (key: string): Promise<{ current: number, ttl: number }>
}

/**
 * The counting of `rateLimit`, also used for the a2a.v1 WebSocket dialect's message limit. A
 * count the store has not given within `storeTimeout` ms (none when absent or 0) fails with an
 * ETIMEDOUT, a service out of reach (Unavailable); the store's answer is then ignored.
 */
export function windowCounter (options: Pick<RateLimitOptions, 'max' | 'timeWindow' | 'store' | 'redis' | 'cacheSize' | 'storeTimeout'>): WindowCounter {
  const timeWindow = options.timeWindow ?? 60_000
  const { max, storeTimeout = 0 } = options
  const store: RateLimitStore = options.store ??
    (options.redis !== undefined
      ? new RedisStore(false, false, options.redis, 'fastify-a2a-rate-limit-')
      : new LocalStore(false, false, options.cacheSize ?? DEFAULT_CACHE_SIZE))
  return {
    max,
    timeWindow,
    count: (key) => new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      let settled = false
      store.incr(key, (error, result) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (error !== null || result === undefined) {
          reject(error ?? new Error('the rate-limit store gave no count'))
          return
        }
        // LocalStore hands back its live record: calls counted in the same tick (frames of
        // one TCP read) would all read the last count. Each call keeps its own.
        resolve({ current: result.current, ttl: result.ttl })
      }, timeWindow, max)
      // The in-memory store counts synchronously: no timer for it.
      if (!settled && storeTimeout > 0) {
        timer = setTimeout(() => {
          settled = true
          reject(Object.assign(new Error(`the rate-limit store gave no count within ${storeTimeout} ms`), { code: 'ETIMEDOUT' }))
        }, storeTimeout)
      }
    })
  }
}

export interface RateLimit extends A2AInterceptor {
  /** `authenticate` (the auth interceptor) with each call it refuses spent from the caller's budget. */
  counting (authenticate: A2AInterceptor): A2AInterceptor
}

export function rateLimit (options: RateLimitOptions): RateLimit {
  const counter = windowCounter({ ...options, storeTimeout: options.storeTimeout ?? DEFAULT_STORE_TIMEOUT })
  const keyOf = options.keyGenerator ?? callerKey

  const spend = async (key: string) => {
    const { current, ttl } = await counter.count(key)
    if (current > counter.max) throw new RateLimitedError(counter.max, counter.timeWindow).with({ details: [retryInfo(ttl)] })
  }
  const before = (context: CallContext, call: InterceptedCall) => spend(keyOf(context, call.request))
  const onUpgrade = (request: FastifyRequest) => spend(`upgrade:${request.ip}`)
  return {
    before,
    // Connections are limited too: each upgrade spends from the client IP's own budget of
    // upgrades (the same max per window), apart from its calls.
    onUpgrade,
    // Auth runs first, so that a caller's budget is its identity's; a call it refuses (a guessed
    // credential) is spent from the budget of the caller as known without one (its IP), and
    // past the budget is answered 429, so that credentials cannot be tried without end.
    counting: (authenticate) => ({
      ...authenticate,
      before: spentWhenRefused(authenticate.before, before),
      onUpgrade: spentWhenRefused(authenticate.onUpgrade, onUpgrade)
    })
  }
}

/** `check`, but a call it refuses is spent first with `spend`, whose own refusal (past the budget) then wins. */
function spentWhenRefused<Args extends unknown[]> (check: ((...args: Args) => unknown) | undefined, spend: (...args: Args) => Promise<void>): (...args: Args) => Promise<void> {
  return async (...args) => {
    try {
      await check?.(...args)
    } catch (refusal) {
      await spend(...args)
      throw refusal
    }
  }
}
