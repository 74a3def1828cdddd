// Runs an ES module body in a child Node process and reads back the JSON it printed: for
// what must be seen from a process of its own (what an import loads, a runtime's globals).
import { spawn } from 'node:child_process'
import { once } from 'node:events'

/** Runs `script` with the Node arguments `args` and `env` added to the environment; resolves with the JSON it printed. */
export async function childJson (script: string, args: string[] = [], env: Record<string, string> = {}): Promise<any> {
  const child = spawn(process.execPath, [...args, '--no-warnings', '--input-type=module', '-e', script], {
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
