// @fastify/rate-limit ships its stores without declarations; both share this shape.
declare module '@fastify/rate-limit/store/LocalStore.js' {
  import type { RateLimitStore } from '../interceptors/rate-limit.js'
  const LocalStore: new (continueExceeding: boolean, exponentialBackoff: boolean, cache: number) => RateLimitStore
  export default LocalStore
}
declare module '@fastify/rate-limit/store/RedisStore.js' {
  import type { RateLimitStore } from '../interceptors/rate-limit.js'
  const RedisStore: new (continueExceeding: boolean, exponentialBackoff: boolean, redis: unknown, keyPrefix: string) => RateLimitStore
  export default RedisStore
}
