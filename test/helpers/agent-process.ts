// Runs the conformance agent as a child process, the way `npm start` does: the compiled
// examples/conformance-agent.ts that test/helpers/build-agent.ts built before the tests.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { AGENT_BUILD } from './build-agent.js'

export interface AgentProcess {
  child: ChildProcess
  origin: string
  stdout: () => string
  stderr: () => string
  exit: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/** The agent exited before it listened: how, and what it wrote. */
export class AgentExitedError extends Error {
  constructor (readonly code: number | null, readonly signal: NodeJS.Signals | null, readonly stdout: string, readonly stderr: string) {
    super(`the agent exited (${code ?? signal}) before listening: ${stdout}${stderr}`)
  }
}

/**
 * With `startScript`, through package.json's `start` script run by `/bin/sh -c` as npm runs
 * it (its `dist/` read as the tests' build), so signals reach the agent as they would there.
 */
export async function startAgentProcess (env: Record<string, string> = {}, { startScript = false } = {}): Promise<AgentProcess> {
  const options: SpawnOptions = { env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }
  const child = startScript
    ? spawn('/bin/sh', ['-c', (await packageStartScript()).replace('dist/', AGENT_BUILD)], options)
    : spawn(process.execPath, [`${AGENT_BUILD}examples/conformance-agent.js`], options)
  let stdout = ''
  let stderr = ''
  const exit = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }))
  const origin = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const match = /^listening on (http:\/\/[^\s]+)$/m.exec(stdout)
      if (match !== null) resolve(match[1] as string)
    })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    exit.then(({ code, signal }) => reject(new AgentExitedError(code, signal, stdout, stderr)), () => {})
  })
  return { child, origin, stdout: () => stdout, stderr: () => stderr, exit }
}

async function packageStartScript (): Promise<string> {
  const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }
  return manifest.scripts.start
}
