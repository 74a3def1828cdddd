// One bench server per process: `node server.js <kind>`, started by harness/servers.ts
// with an IPC channel. It reports its port once it listens on 127.0.0.1 and answers
// requests for its CPU time and (after a full GC, which --expose-gc allows) its memory. SIGTERM exits through process.exit so that --cpu-prof writes its profile.
import type { StartedServer } from './servers/common.js'
import type { ServerKind, ServerMessage, ParentMessage } from './harness/protocol.js'

const starters: Record<ServerKind, () => Promise<{ start (): Promise<StartedServer> }>> = {
  'fastify-a2a': () => import('./servers/fastify-a2a.js'),
  'handler-stub': () => import('./servers/handler-stub.js'),
  'a2a-js': () => import('./servers/a2a-js.js'),
  'bare-fastify': () => import('./servers/bare-fastify.js'),
  'bare-ws': () => import('./servers/bare-ws.js')
}

const send = (message: ServerMessage) => process.send?.(message)
const gc = (globalThis as { gc?: () => void }).gc

const kind = process.argv[2] as ServerKind
const starter = starters[kind]
if (starter === undefined || process.send === undefined) {
  console.error(`usage: node server.js <${Object.keys(starters).join('|')}> (with an IPC channel)`)
  process.exit(2)
}

process.on('SIGTERM', () => process.exit(0))
// The orchestrator is gone: no bench server outlives it.
process.on('disconnect', () => process.exit(0))
process.on('message', (message: ParentMessage) => {
  if (message.type === 'cpu') {
    const { user, system } = process.cpuUsage()
    send({ type: 'cpu', id: message.id, user, system })
    return
  }
  // Twice: the first pass may only queue finalizers whose memory the second frees.
  gc?.()
  gc?.()
  const { heapUsed, rss, external, arrayBuffers } = process.memoryUsage()
  send({ type: 'memory', id: message.id, heapUsed, rss, external, arrayBuffers })
})

const { port } = await (await starter()).start()
send({ type: 'listening', port })
