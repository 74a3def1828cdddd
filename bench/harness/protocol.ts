// The IPC messages between the orchestrator and a bench server process.
export type ServerKind = 'fastify-a2a' | 'handler-stub' | 'a2a-js' | 'bare-fastify' | 'bare-ws'

export interface MemoryReport {
  heapUsed: number
  rss: number
  external: number
  arrayBuffers: number
}

/** CPU time the server process has used (process.cpuUsage), in µs. */
export interface CpuReport {
  user: number
  system: number
}

export type ServerMessage =
  | { type: 'listening', port: number }
  | ({ type: 'memory', id: number } & MemoryReport)
  | ({ type: 'cpu', id: number } & CpuReport)

export type ParentMessage = { type: 'memory' | 'cpu', id: number }
