// Graceful shutdown, run from Fastify's preClose (before the server stops listening):
// new calls are refused, work in progress gets `completionGrace`, executions still
// running are cancelled and get `taskGrace` to write their final state, then every
// stream and WebSocket connection still open is ended. README, *Hardening*.
import type { Server as HttpServer } from 'node:http'
import { shuttingDown } from './errors/index.js'
import type { CallRunner } from './dispatcher/call.js'
import { sseResponses } from './dispatcher/sse.js'
import type { WebSocketServer } from './dispatcher/websocket-connection.js'
import type { RequestHandler } from './handler/request-handler.js'
import type { NormalizedShutdownOptions } from './options.js'

export interface ShutdownReport {
  /** Executions that finished by themselves within `completionGrace`. */
  drained: number
  /** Executions cancelled at `completionGrace` that ended within `taskGrace`. */
  cancelled: number
  /** Executions still running after `taskGrace`: their tasks were marked CANCELED and the executors left behind. */
  abandoned: number
  /** Streams still open at the end (e.g. subscriptions to a task waiting for input), ended with -32603 Unavailable. */
  streamsEnded: number
  /** WebSocket connections closed with 1001. */
  webSocketsClosed: number
}

export interface ShutdownParts {
  handler: RequestHandler
  runner: CallRunner
  webSockets: WebSocketServer
  /** `fastify.server`: the SSE responses written on it. */
  server: object
  options: NormalizedShutdownOptions
  /** Push deliveries: those still pending get the last phase's grace, as the answers do; then closing drops them. */
  push?: { readonly pending: number }
}

const POLL_MS = 10

/** Resolves once `done()` holds or `ms` passed, polling: nothing here is evented across bindings. */
async function waitUntil (done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (!done() && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, POLL_MS))
}

const IDLE_SWEEP_MS = 50

/**
 * The server's close ends the connections idle then; one whose answer is written later (a
 * call held past the grace periods by a hung store, say) goes idle after it and would hold
 * the close for its keep-alive time (72 s by Fastify's default). Until the server has
 * closed, idle connections are ended as they appear. HTTP/2 sessions close by themselves.
 */
function closeConnectionsGoingIdle (server: object): void {
  const http1 = server as Partial<Pick<HttpServer, 'closeIdleConnections' | 'listening' | 'once'>>
  if (typeof http1.closeIdleConnections !== 'function' || http1.listening !== true) return
  const sweep = setInterval(() => http1.closeIdleConnections?.(), IDLE_SWEEP_MS).unref()
  http1.once?.('close', () => clearInterval(sweep))
}

export async function shutDown ({ handler, runner, webSockets, server, options, push }: ShutdownParts): Promise<ShutdownReport> {
  runner.refuseNewCalls()
  const running = handler.runningExecutions
  await waitUntil(() => handler.runningExecutions === 0 && runner.inFlight === 0, options.completionGrace)

  // Also when none runs: a call still checking its push config (or waiting for its task's
  // lease) is refused from here, instead of starting an execution nothing would cancel.
  const late = handler.abortExecutions()
  let abandoned = 0
  let lastPhase = Date.now()
  if (late > 0) {
    await waitUntil(() => handler.runningExecutions === 0, options.taskGrace)
    // The abandoned tasks' CANCELED writes take from the last phase's taskGrace: a store that
    // does not answer holds shutdown no longer (their calls are then answered Unavailable).
    lastPhase = Date.now()
    abandoned = await handler.abandonExecutions(options.taskGrace)
  }

  // What no task end closes (a subscription to a task waiting for input) ends here; then
  // the answers and last events of every call, and the push deliveries of the tasks' last
  // events, get what is left of taskGrace to be written.
  const streamsEnded = handler.failStreams(shuttingDown())
  await waitUntil(() => runner.inFlight === 0 && (push?.pending ?? 0) === 0, options.taskGrace - (Date.now() - lastPhase))
  // A call is over before its answer is written (coalesceReplies holds it to the end of the
  // turn): one turn more, so that the server's close finds those connections idle, not busy
  // (a connection that goes idle after the close would be held open for its keep-alive time).
  await new Promise(resolve => setImmediate(resolve))
  // An SSE reader that stopped reading cannot be waited for any longer.
  for (const response of sseResponses(server)) response.destroy()
  const webSocketsClosed = webSockets.connections
  await webSockets.drain(0)
  closeConnectionsGoingIdle(server)
  return { drained: Math.max(0, running - late), cancelled: late - abandoned, abandoned, streamsEnded, webSocketsClosed }
}
