// Serves the browser demo at /demo: the page, its script and stylesheet, and the client
// (fastify-a2a/client) as ES modules under /demo/client/.
//
// The client is served from the same tree this file runs from, so both ways of running
// work without a bundler: compiled (`npm start` builds first, and this file runs as
// dist/examples/browser/route.js next to dist/lib/client/*.js, served as they are), or as
// TypeScript (the tests, with no build): then lib/client/*.ts is transpiled on request with
// `typescript`'s transpileModule, cached until the file changes. Serving whichever tree this
// process runs never mixes a stale build with newer sources.
import { existsSync } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'

const here = dirname(fileURLToPath(import.meta.url))
const compiled = import.meta.url.endsWith('.js')
const clientDir = fileURLToPath(new URL('../../lib/client/', import.meta.url))

/** The page's own files are not compiled: find examples/browser/ in this tree or an ancestor (a build may sit at any depth). */
function findAssets (): string {
  for (let dir = here; ; dir = dirname(dir)) {
    for (const candidate of [dir, join(dir, 'examples', 'browser')]) {
      if (existsSync(join(candidate, 'index.html')) && existsSync(join(candidate, 'app.js'))) return candidate
    }
    if (dirname(dir) === dir) throw new Error('examples/browser/index.html not found')
  }
}
const assetsDir = findAssets()

const PAGE = { file: 'index.html', type: 'text/html; charset=utf-8' }
const assets: Record<string, { file: string, type: string }> = {
  'app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  'style.css': { file: 'style.css', type: 'text/css; charset=utf-8' }
}

/** A module path under lib/client: lowercase names and folders, nothing else. */
const MODULE_PATH = /^(?:[a-z0-9-]+\/)*[a-z0-9-]+\.js$/

const transpiled = new Map<string, { mtimeMs: number, code: string }>()

async function transpile (file: string): Promise<string> {
  const { mtimeMs } = await stat(file)
  const cached = transpiled.get(file)
  if (cached?.mtimeMs === mtimeMs) return cached.code
  const ts = (await import('typescript')).default
  const { outputText } = ts.transpileModule(await readFile(file, 'utf8'), {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 }
  })
  transpiled.set(file, { mtimeMs, code: outputText })
  return outputText
}

/** The client module's JavaScript, or undefined when there is no such module. */
async function clientModule (path: string): Promise<string | undefined> {
  if (!MODULE_PATH.test(path)) return undefined
  const file = join(clientDir, compiled ? path : path.replace(/\.js$/, '.ts'))
  if (!existsSync(file)) return undefined
  return compiled ? await readFile(file, 'utf8') : await transpile(file)
}

function serve (reply: FastifyReply, type: string, body: string): FastifyReply {
  return reply.type(type).header('cache-control', 'no-cache').send(body)
}

export async function browserDemo (fastify: FastifyInstance): Promise<void> {
  const page = async (_request: unknown, reply: FastifyReply) => serve(reply, PAGE.type, await readFile(join(assetsDir, PAGE.file), 'utf8'))
  fastify.get('/demo', page)
  fastify.get('/demo/', page)
  fastify.get<{ Params: { name: string } }>('/demo/:name', async (request, reply) => {
    const asset = assets[request.params.name]
    if (asset === undefined) return reply.callNotFound()
    return serve(reply, asset.type, await readFile(join(assetsDir, asset.file), 'utf8'))
  })
  fastify.get<{ Params: { '*': string } }>('/demo/client/*', async (request, reply) => {
    const code = await clientModule(request.params['*'])
    if (code === undefined) return reply.callNotFound()
    return serve(reply, 'text/javascript; charset=utf-8', code)
  })
}
