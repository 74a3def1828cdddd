// The optional backends (better-sqlite3, pg, ioredis) are optional peer dependencies: a
// memory-only agent neither installs nor loads them. Each is loaded here, on the first call
// that needs it, never at `import 'fastify-a2a'`. All three are CommonJS, so `require` loads
// them synchronously and the synchronous APIs (openSqliteStores, the constructors) stay so.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const loaded = new Map<string, unknown>()

/** How to install each optional backend, for the error naming it. */
export const OPTIONAL_BACKENDS: Readonly<Record<string, string>> = {
  'better-sqlite3': 'better-sqlite3@12',
  pg: 'pg@8',
  ioredis: 'ioredis@5'
}

/** Thrown when an optional backend a function needs is not installed. */
export class MissingBackendError extends Error {
  readonly code = 'ERR_A2A_MISSING_BACKEND'
  constructor (readonly backend: string, user: string, options?: ErrorOptions) {
    super(`fastify-a2a: ${user} needs ${backend} (npm install ${OPTIONAL_BACKENDS[backend] ?? backend})`, options)
    this.name = 'MissingBackendError'
  }
}

/**
 * The module `name`, loaded once. `user` names what needs it, for the error when it is not
 * installed; any other failure to load it (a broken native build) is thrown as it is.
 */
export function optionalRequire<T> (name: string, user: string): T {
  if (loaded.has(name)) return loaded.get(name) as T
  let module: T
  try {
    module = require(name) as T
  } catch (error) {
    // Only the module itself missing: a dependency of it missing is a broken install, reported as is.
    const missing = (error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' &&
      (error as Error).message.startsWith(`Cannot find module '${name}'`)
    if (missing) throw new MissingBackendError(name, user, { cause: error })
    throw error
  }
  loaded.set(name, module)
  return module
}
