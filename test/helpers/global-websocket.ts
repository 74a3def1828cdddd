// Runs client code with Node's own WebSocket (undici's: global from Node 22, behind
// --experimental-websocket on Node 20), in a child process under the TypeScript loader:
// the standard WebSocket API a browser has, on real sockets.
import { spawn } from 'node:child_process'
import { once } from 'node:events'

/** Runs `script` (an ES module body, run from the repository root) with `env` added; resolves with the JSON it printed. */
export async function withGlobalWebSocket (script: string, env: Record<string, string>): Promise<any> {
  const loader = process.execArgv.filter(arg => arg.includes('@tapjs/typescript'))
  const child = spawn(process.execPath, [...loader, '--experimental-websocket', '--no-warnings', '--input-type=module', '-e', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const [code] = await once(child, 'exit')
  if (code !== 0) throw new Error(`the child failed (${code}): ${stderr}`)
  return JSON.parse(stdout)
}
