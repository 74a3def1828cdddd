// The package as a consumer gets it: the optional backends (better-sqlite3, pg, ioredis) are
// optional peer dependencies, loaded only by the functions that need them, never at
// `import 'fastify-a2a'`; a missing one is named in the error. The manifest makes Fastify
// a peer, and offers the package to `import` and to `require`.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { Redis } from 'ioredis'
import type { RedisClient, RedisConnection } from '../lib/index.js'
import * as exported from '../lib/index.js'
import { MissingBackendError, optionalRequire } from '../lib/optional-require.js'
import { AGENT_BUILD } from './helpers/build-agent.js'
import { childJson } from './helpers/child-json.js'

const BACKENDS = ['better-sqlite3', 'pg', 'ioredis'] as const

t.test('importing the main entry loads none of the optional backends; the functions needing one load it', async t => {
  // The compiled lib/ that test/helpers/build-agent.ts built before the tests (tsconfig.build.json, as `npm run build`).
  const entry = join(AGENT_BUILD, 'lib', 'index.js')
  const result = await childJson(`
    import { createRequire } from 'node:module'
    const require = createRequire(import.meta.url)
    // Every CommonJS module, whether required or imported, is in require.cache; the three backends are CommonJS.
    const loaded = () => {
      const packages = new Set()
      for (const file of Object.keys(require.cache)) {
        const inside = file.split('/node_modules/')
        if (inside.length < 2) continue
        const [first, second] = inside.at(-1).split('/')
        packages.add(first.startsWith('@') ? first + '/' + second : first)
      }
      return ${JSON.stringify(BACKENDS)}.filter(name => packages.has(name))
    }
    const a2a = await import(${JSON.stringify(entry)})
    const atImport = loaded()
    a2a.openSqliteStores({ path: ':memory:' }).close()
    const afterSqlite = loaded()
    new a2a.PostgresPushConfigStore({ query: async () => ({ rows: [] }) }, 'some_schema')
    const afterPg = loaded()
    a2a.redisBus({ url: 'redis://127.0.0.1:1', onError: () => {} })
    const afterRedis = loaded()
    process.stdout.write(JSON.stringify({ atImport, afterSqlite, afterPg, afterRedis }))
    process.exit(0)
  `)
  t.same(result.atImport, [], 'import \'fastify-a2a\' loads neither better-sqlite3, pg nor ioredis')
  t.same(result.afterSqlite, ['better-sqlite3'], 'openSqliteStores loads better-sqlite3 (the check sees a loaded backend)')
  t.same(result.afterPg, ['better-sqlite3', 'pg'], 'a PostgreSQL store loads pg')
  t.same(result.afterRedis, [...BACKENDS], 'redisBus with a url loads ioredis')
})

t.test('a missing backend is named, with how to install it', async t => {
  const name = 'fastify-a2a-no-such-backend'
  t.throws(() => optionalRequire(name, 'someFunction'), {
    name: 'MissingBackendError',
    code: 'ERR_A2A_MISSING_BACKEND',
    backend: name,
    message: `fastify-a2a: someFunction needs ${name} (npm install ${name})`,
    cause: { code: 'MODULE_NOT_FOUND' }
  })
  t.equal(new MissingBackendError('better-sqlite3', 'openSqliteStores').message,
    'fastify-a2a: openSqliteStores needs better-sqlite3 (npm install better-sqlite3@12)')
  t.equal(new MissingBackendError('pg', 'openPostgresStores').message, 'fastify-a2a: openPostgresStores needs pg (npm install pg@8)')
  t.equal(new MissingBackendError('ioredis', 'redisBus').message, 'fastify-a2a: redisBus needs ioredis (npm install ioredis@5)')
  t.equal(exported.MissingBackendError, MissingBackendError, 'exported from the main entry, for instanceof')
})

t.test('a backend that is there but fails to load is reported as it failed, not as missing', async t => {
  const dir = t.testdir({
    'broken.cjs': 'throw new Error(\'the native build is broken\')',
    'lacking.cjs': 'require(\'fastify-a2a-no-such-dependency\')'
  })
  t.throws(() => optionalRequire(join(dir, 'broken.cjs'), 'someFunction'), { message: 'the native build is broken' })
  const error = t.throws(() => optionalRequire(join(dir, 'lacking.cjs'), 'someFunction')) as Error
  t.notOk(error instanceof MissingBackendError, 'a dependency of the backend missing is a broken install, reported as is')
  t.match(error, { code: 'MODULE_NOT_FOUND', message: /fastify-a2a-no-such-dependency/ })
})

t.test('a backend is loaded once', async t => {
  t.equal(optionalRequire('pg', 'a'), optionalRequire('pg', 'b'))
})

t.test('an ioredis connection is a RedisConnection and a RedisClient (types checked by the typecheck)', async t => {
  const fits: [Redis] extends [RedisClient & RedisConnection] ? true : false = true
  t.ok(fits)
})

t.test('the manifest: Fastify and the backends are peers, the backends optional', async t => {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  t.notOk('fastify' in manifest.dependencies, 'a plugin does not bring its own Fastify')
  t.equal(manifest.peerDependencies.fastify, '^5.0.0')
  t.notOk(manifest.peerDependenciesMeta?.fastify?.optional, 'Fastify is a required peer')
  t.ok('fastify' in manifest.devDependencies, 'Fastify is installed for the repository\'s own tests')
  for (const backend of BACKENDS) {
    t.notOk(backend in manifest.dependencies, `${backend} is no dependency`)
    t.ok(backend in manifest.peerDependencies, `${backend} is a peer`)
    t.equal(manifest.peerDependenciesMeta[backend]?.optional, true, `${backend} is an optional peer`)
    t.ok(backend in manifest.devDependencies, `${backend} is installed for the repository's own tests`)
  }
  for (const types of ['@types/pg', '@types/better-sqlite3']) {
    t.ok(types in manifest.dependencies, `${types}: the declarations use its types, so a consumer type-checks without the backend`)
  }
})

t.test('the manifest offers the entries to import and to require (Node >= 20.19), types first', async t => {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  for (const subpath of ['.', './client']) t.same(Object.keys(manifest.exports[subpath]), ['types', 'default'], subpath)
})

t.test('a pack ships a fresh build of dist/lib, with source maps that hold their sources', async t => {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  t.same(manifest.files, ['dist/lib'])
  t.equal(manifest.scripts.prepack, 'rm -rf dist && npm run build', 'a clean checkout never packs an empty package')
  const build = JSON.parse(await readFile(new URL('../tsconfig.build.json', import.meta.url), 'utf8'))
  t.equal(build.compilerOptions.inlineSources, true, 'the maps point at lib/*.ts, which is not shipped: they carry its text')
})
