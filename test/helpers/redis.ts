// Redis for tests: the local server (127.0.0.1:6379). Without it the tests skip, except
// under CI, where that is a failure.
import { Redis } from 'ioredis'
import type { Test } from 'tap'

export const REDIS_URL = process.env.A2A_TEST_REDIS ?? 'redis://127.0.0.1:6379'

let found: Promise<boolean> | undefined

function answers (): Promise<boolean> {
  found ??= (async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 })
    try {
      await client.connect()
      return await client.ping() === 'PONG'
    } catch {
      return false
    } finally {
      client.disconnect()
    }
  })()
  return found
}

/** The Redis URL, or undefined after marking `t` skipped (failed under CI) because no Redis answered. */
export async function requireRedis (t: Test): Promise<string | undefined> {
  if (await answers()) return REDIS_URL
  const reason = `no Redis reachable at ${REDIS_URL}`
  if (process.env.CI !== undefined && process.env.CI !== '') t.fail(`${reason}; CI must run the Redis tests`)
  else t.plan(0, `skipped: ${reason}`)
  return undefined
}
