// Runs the conformance agent as a child process, the way `npm start` does: the compiled
// examples/conformance-agent.ts that test/helpers/build-agent.ts built before the tests.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { AGENT_BUILD } from './build-agent.js'

export interface AgentProcess {
  child: ChildProcess
  origin: string
  stdout: () => string
  exit: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

export async function startAgentProcess (env: Record<string, string> = {}): Promise<AgentProcess> {
  const child = spawn(process.execPath, [`${AGENT_BUILD}examples/conformance-agent.js`], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  const exit = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }))
  const origin = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const match = /^listening on (http:\/\/[^\s]+)$/m.exec(stdout)
      if (match !== null) resolve(match[1] as string)
    })
    child.stderr?.resume()
    exit.then(({ code }) => reject(new Error(`the agent exited (${code}) before listening: ${stdout}`)), () => {})
  })
  return { child, origin, stdout: () => stdout, exit }
}
