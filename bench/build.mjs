// Compiles the bench, and the lib and example it runs, into .bench-build/ (gitignored)
// with TypeScript's transpileModule: only the files changed since the last build, and no
// type check (`npm run typecheck` covers bench/ too), so a rebuild takes a moment where
// `tsc -p` takes tens of seconds on this machine. Plain JS: it runs before anything is
// compiled.
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = join(root, '.bench-build')

/** Every .ts file under `dir` (relative to the repo), declaration files and `skip` left out. */
async function sources (dir, skip = []) {
  const entries = await readdir(join(root, dir), { recursive: true, withFileTypes: true })
  return entries
    .filter(entry => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map(entry => relative(root, join(entry.parentPath ?? entry.path, entry.name)))
    .filter(file => !skip.some(prefix => file.startsWith(prefix)))
}

const files = [
  ...await sources('lib'),
  ...await sources('bench', ['bench/results/', 'bench/store-append.ts']),
  'examples/agent.ts'
]

const mtime = async (file) => (await stat(file).catch(() => undefined))?.mtimeMs ?? -1
const stale = []
for (const file of files) {
  const target = join(out, file.replace(/\.ts$/, '.js'))
  if (await mtime(join(root, file)) > await mtime(target)) stale.push([file, target])
}

if (stale.length > 0) {
  const { default: ts } = await import('typescript')
  const compilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, esModuleInterop: true }
  for (const [file, target] of stale) {
    const { outputText } = ts.transpileModule(await readFile(join(root, file), 'utf8'), { compilerOptions, fileName: file })
    await mkdir(dirname(target), { recursive: true })
    await writeFile(target, outputText)
  }
}
console.error(`bench build: ${stale.length} of ${files.length} files compiled into ${relative(root, out)}/`)
