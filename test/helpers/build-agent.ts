// Runs once before the test files (.taprc `before`): compiles the conformance agent so the
// tests that start it as a child process (as `npm start` does) start it in about a second,
// instead of compiling the whole project again under the TypeScript loader at every start.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const AGENT_BUILD = fileURLToPath(new URL('../../.tap/agent-build/', import.meta.url))

if (import.meta.url === `file://${process.argv[1]}`) {
  execFileSync(process.execPath, [fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.build.json', '--outDir', AGENT_BUILD], { stdio: 'inherit' })
}
