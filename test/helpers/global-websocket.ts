// Runs client code with Node's own WebSocket (undici's: global from Node 22, behind
// --experimental-websocket on Node 20), in a child process under the TypeScript loader:
// the standard WebSocket API a browser has, on real sockets.
import { childJson } from './child-json.js'

/** Runs `script` (an ES module body, run from the repository root) with `env` added; resolves with the JSON it printed. */
export async function withGlobalWebSocket (script: string, env: Record<string, string>): Promise<any> {
  const loader = process.execArgv.filter(arg => arg.includes('@tapjs/typescript'))
  return await childJson(script, [...loader, '--experimental-websocket'], env)
}
