// Disconnect storm (issue 9 §3): 1,000 WebSocket clients and 1,000 SSE clients each open
// a stream and drop it mid-way. Afterwards no subscriber is left on the bus, no timer is
// pending for them, every task finished normally, and the heap is back within 10 % of
// its baseline after GC.
import http from 'node:http'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t, { type Test } from 'tap'
import WebSocket from 'ws'
import { MemoryTaskStore, type AgentExecutor } from '../lib/index.js'
import { eventually, startServer, userMessage, V1 } from './helpers/server.js'
import { wsUrl } from './helpers/ws.js'
import { liveTimeouts } from './helpers/timers.js'

// gc() without --expose-gc on the command line: a flag set at run time, read in a new context.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const CLIENTS = 1000
const PARALLEL = 50

/** Each task streams one chunk, waits for the gate, then finishes: clients drop in between. */
let openGate!: () => void
let gate = new Promise<void>(resolve => { openGate = resolve })
const finished = new Set<string>()
const executor: AgentExecutor = {
  async execute (context, events) {
    await events.working()
    await events.artifact({ artifactId: 'storm', parts: [{ text: 'chunk 1' }] })
    await gate
    await events.artifact({ artifactId: 'storm', parts: [{ text: 'chunk 2' }] }, { append: true, lastChunk: true })
    await events.completed()
    finished.add(context.taskId)
  }
}

// The store's clock is the test's: nothing expires during a round, everything after it.
let clock = 1_000_000
const taskStore = new MemoryTaskStore({ ttl: 1000, now: () => clock })
const server = await startServer({ executor, taskStore, websocket: { idleTimeout: 60_000 } })
t.teardown(() => server.close())
const { a2a } = server.fastify

const request = (text: string) => ({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: userMessage(text) } })

/** Opens a WebSocket stream, waits for its first three frames (task, working, chunk), then drops the TCP connection. */
async function webSocketClient (): Promise<void> {
  const socket = new WebSocket(wsUrl(server.origin))
  await new Promise<void>((resolve, reject) => {
    let frames = 0
    socket.on('message', () => {
      if (++frames === 3) {
        socket.terminate()
        resolve()
      }
    })
    socket.on('open', () => socket.send(JSON.stringify(request('ws'))))
    socket.on('error', reject)
  })
}

/** The same over SSE: three events, then the connection is destroyed. */
async function sseClient (): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const outgoing = http.request(server.endpoint, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...V1 } }, (response) => {
      let events = 0
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        events += chunk.split('\n\n').length - 1
        if (events >= 3) {
          outgoing.destroy()
          resolve()
        }
      })
    })
    outgoing.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'ECONNRESET') reject(error) })
    outgoing.end(JSON.stringify(request('sse')))
  })
}

async function inBatches (count: number, client: () => Promise<void>): Promise<void> {
  for (let started = 0; started < count; started += PARALLEL) {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count - started) }, client))
  }
}

const liveTimers = liveTimeouts(t)
const timers = () => liveTimers.size

function heapAfterGc (): number {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

/** One round: `count` clients per binding drop mid-stream, then the gate opens and every task finishes. */
async function storm (t: Test, count: number): Promise<void> {
  finished.clear()
  await Promise.all([inBatches(count, webSocketClient), inBatches(count, sseClient)])
  await eventually(() => a2a.bus.listenerCount() === 0, 20_000)
  t.equal(a2a.bus.listenerCount(), 0, 'every dropped stream released its subscription')
  t.equal(a2a.handler.runningExecutions, 2 * count, 'the tasks outlive their streams')
  // executorTimeout bounds them all with one timer (lib/handler/deadlines.ts), not one each;
  // the dropped connections' timers go (their destroy hooks run on a later turn).
  const fewer = Math.max(count, 10)
  await eventually(() => timers() < fewer, 20_000)
  t.ok(timers() >= 1 && timers() < fewer, `while they run, their bound is pending, one timer for all: ${timers()} timers for ${2 * count} executions`)
  openGate()
  await eventually(() => finished.size === 2 * count, 20_000)
  gate = new Promise<void>(resolve => { openGate = resolve })
  const completed = await taskStore.list({ status: 'TASK_STATE_COMPLETED', pageSize: 1 }, { tenant: '' })
  t.equal(completed.totalSize, 2 * count, 'every task finished normally')
  t.equal(a2a.handler.runningExecutions, 0)
  t.equal(a2a.handler.openStreams, 0)
  // Expire this round's tasks: the next task created sweeps them.
  clock += 10_000
}

t.test('1,000 WebSocket and 1,000 SSE clients drop mid-stream', async t => {
  // A small round first, so that lazily built state (compiled code, pools) is in the baseline.
  await storm(t, 20)
  await eventually(() => server.fastify.websocketServer.clients.size === 0)
  const baselineTimers = timers()
  const baselineHeap = heapAfterGc()

  await storm(t, CLIENTS)
  await eventually(() => server.fastify.websocketServer.clients.size === 0, 20_000)
  t.equal(a2a.bus.listenerCount(), 0, 'no subscriber left on the bus')
  await eventually(() => timers() <= baselineTimers, 20_000)
  t.ok(timers() <= baselineTimers, 'no timer left pending for them')
  // One more task sweeps the expired ones, as any write to the store does.
  await storm(t, 1)
  const heap = heapAfterGc()
  t.ok(heap <= baselineHeap * 1.1, `heap ${(heap / 2 ** 20).toFixed(1)} MiB within 10 % of the baseline ${(baselineHeap / 2 ** 20).toFixed(1)} MiB`)
  t.equal(taskStore.size, 2, 'only the last round\'s tasks are held')
})
