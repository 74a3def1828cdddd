// The scenarios of issue 8. Each starts the servers it compares, warms them up, then
// takes its repetitions in turn across the servers (ours, peer, ceiling, ours, …) so
// that the machine's drift during a run falls on every server alike.
import { setTimeout as sleep } from 'node:timers/promises'
import type { CpuReport } from './harness/protocol.js'
import { withServers, type BenchServer } from './harness/servers.js'
import { Samples, percentile, type Figure } from './harness/stats.js'
import { checkAnswer, measureHttp } from './load/http.js'
import { measureSse } from './load/sse.js'
import { closeSocket, dropAll, measurePipeline, measureWsStream, openIdle, openSocket, sequentialLatencies } from './load/ws.js'
import { FLOOR_PATH, PEER_JSONRPC_PATH, PEER_REST_PATH } from './servers/common.js'

export interface Plan {
  mode: 'full' | 'quick'
  repetitions: number
  /** Seconds of load per HTTP measurement, and of warm-up before the first. */
  httpSeconds: number
  warmupSeconds: number
  httpConnections: number
  /** Milliseconds per WebSocket pipeline measurement. */
  pipelineMs: number
  inFlight: number
  /** The two stream lengths on our bindings, and on the peer's (whose cost is quadratic). */
  streamChunks: readonly [number, number]
  /** P3 on our bindings: streams of the smaller length run before measuring, and measured pairs (the peer: 1 and `repetitions`). */
  streamWarmups: number
  streamRepetitions: number
  peerStreamChunks: readonly [number, number]
  /** Idle connections held: the smaller count, then the larger. */
  idleCounts: readonly [number, number]
  /** Measure the bare `ws` server's idle connections too (the row's ceiling; no target rests on it). */
  idleCeiling: boolean
  getTaskCalls: number
}

const V1 = { 'a2a-version': '1.0' }
const JSON_HEADERS = { 'content-type': 'application/json', ...V1 }
const userMessage = (text: string) => ({ messageId: 'bench', role: 'ROLE_USER', parts: [{ text }] })
const rpc = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method, params })
const wsUrl = (origin: string) => origin.replace(/^http/, 'ws') + '/?A2A-Version=1.0'
const completed = (text: string) => text.includes('"TASK_STATE_COMPLETED"')
const cpuPerCall = (before: CpuReport, after: CpuReport, calls: number) => (after.user + after.system - before.user - before.system) / calls

// ---- P1 and REST: unary SendMessage over HTTP ---------------------------------------------

type HttpTarget = 'p1.ours' | 'p1.peer' | 'p1.ceiling' | 'p1.floor' | 'p1.stub' | 'rest.ours' | 'rest.peer'
/** Requests per second, p99 latency (ms), and the server's CPU time per request (µs). */
export type HttpFigureName = `${HttpTarget}.${'rps' | 'p99' | 'cpu'}`

export async function httpUnary (plan: Plan): Promise<Record<HttpFigureName, Figure>> {
  return await withServers(['fastify-a2a', 'a2a-js', 'bare-fastify', 'handler-stub'] as const, async (servers) => {
    const rpcBody = rpc(1, 'SendMessage', { message: userMessage('hello') })
    const restBody = JSON.stringify({ message: userMessage('hello') })
    const ours = servers['fastify-a2a']
    const peer = servers['a2a-js']
    const ceiling = servers['bare-fastify']
    const stub = servers['handler-stub']
    const targets: Array<{ name: HttpTarget, server: BenchServer, url: string, body: string, expect: (text: string) => boolean }> = [
      { name: 'p1.ours', server: ours, url: ours.origin + '/', body: rpcBody, expect: completed },
      { name: 'p1.peer', server: peer, url: peer.origin + PEER_JSONRPC_PATH, body: rpcBody, expect: completed },
      { name: 'p1.ceiling', server: ceiling, url: ceiling.origin + '/', body: rpcBody, expect: (text: string) => text.includes('"ok":true') },
      { name: 'p1.floor', server: ceiling, url: ceiling.origin + FLOOR_PATH, body: rpcBody, expect: completed },
      { name: 'p1.stub', server: stub, url: stub.origin + '/', body: rpcBody, expect: completed },
      { name: 'rest.ours', server: ours, url: ours.origin + '/message:send', body: restBody, expect: completed },
      { name: 'rest.peer', server: peer, url: peer.origin + PEER_REST_PATH + '/message:send', body: restBody, expect: completed }
    ]
    const load = (target: typeof targets[number], durationSec: number) =>
      measureHttp({ url: target.url, body: target.body, headers: JSON_HEADERS, connections: plan.httpConnections, durationSec })
    for (const target of targets) {
      await checkAnswer(target.url, target.body, JSON_HEADERS, target.expect)
      await load(target, plan.warmupSeconds)
    }
    const samples = new Samples<HttpFigureName>()
    for (let rep = 0; rep < plan.repetitions; rep++) {
      for (const target of targets) {
        const cpuBefore = await target.server.cpu()
        const result = await load(target, plan.httpSeconds)
        samples.add(`${target.name}.rps`, result.requestsPerSec)
        samples.add(`${target.name}.p99`, result.p99Ms)
        samples.add(`${target.name}.cpu`, cpuPerCall(cpuBefore, await target.server.cpu(), result.total))
        // Still answering correctly after the load (a JSON-RPC error is a 200 too).
        await checkAnswer(target.url, target.body, JSON_HEADERS, target.expect)
      }
    }
    return samples.figures()
  })
}

// ---- P2: unary SendMessage over one WebSocket, many in flight -------------------------------

/** Round trips per second, and the server's CPU time per round trip (µs). */
export type PipelineFigureName = `${'p2.ours' | 'p2.ceiling' | 'p2.stub'}.${'rtps' | 'cpu'}`

export async function webSocketUnary (plan: Plan): Promise<Record<PipelineFigureName, Figure>> {
  return await withServers(['fastify-a2a', 'bare-ws', 'handler-stub'] as const, async (servers) => {
    const params = JSON.stringify({ message: userMessage('hello') })
    // The same frame to all: the echo server sends it back, ours answers it.
    const frame = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"SendMessage","params":${params}}`
    const completedTask = (reply: any) => { if (reply.result?.task?.status?.state !== 'TASK_STATE_COMPLETED') throw new Error(`P2: ${JSON.stringify(reply).slice(0, 300)}`) }
    const targets = [
      { name: 'p2.ours', server: servers['fastify-a2a'], url: wsUrl(servers['fastify-a2a'].origin), check: completedTask },
      {
        name: 'p2.ceiling',
        server: servers['bare-ws'],
        url: servers['bare-ws'].origin.replace(/^http/, 'ws'),
        check: (reply: any) => { if (reply.method !== 'SendMessage') throw new Error(`P2 echo: ${JSON.stringify(reply).slice(0, 300)}`) }
      },
      { name: 'p2.stub', server: servers['handler-stub'], url: wsUrl(servers['handler-stub'].origin), check: completedTask }
    ] as const
    const load = (target: typeof targets[number], durationMs: number) =>
      measurePipeline({ url: target.url, frame, check: target.check, inFlight: plan.inFlight, durationMs, maxCalls: 2_000_000 })
    for (const target of targets) await load(target, plan.warmupSeconds * 1000)
    const samples = new Samples<PipelineFigureName>()
    for (let rep = 0; rep < plan.repetitions; rep++) {
      for (const target of targets) {
        const cpuBefore = await target.server.cpu()
        const result = await load(target, plan.pipelineMs)
        samples.add(`${target.name}.rtps`, result.roundTripsPerSec)
        samples.add(`${target.name}.cpu`, cpuPerCall(cpuBefore, await target.server.cpu(), result.completed))
      }
    }
    return samples.figures()
  })
}

// ---- P3: long streams of appended artifact chunks -------------------------------------------

export type StreamFigureName =
  | 'p3.ws.small.ms' | 'p3.ws.large.ms' | 'p3.ws.ratio' | 'p3.ws.eventsPerSec'
  | 'p3.sse.small.ms' | 'p3.sse.large.ms' | 'p3.sse.ratio' | 'p3.sse.eventsPerSec'
  | 'p3.peer.small.ms' | 'p3.peer.large.ms' | 'p3.peer.ratio' | 'p3.peer.eventsPerSec'
  /** The server's CPU time per event of the large stream (µs). */
  | 'p3.ws.cpu' | 'p3.sse.cpu' | 'p3.peer.cpu'

/** The events of a `stream <N>` turn: the task, `working`, N chunks, `completed`. */
const streamEvents = (chunks: number) => chunks + 3
const STREAM_TIMEOUT_MS = 120_000

/** Figures, and the bindings whose stream failed (a failed binding is not run again). */
export interface StreamResults {
  figures: Partial<Record<StreamFigureName, Figure>>
  failures: Record<string, string>
}

export async function streaming (plan: Plan): Promise<StreamResults> {
  return await withServers(['fastify-a2a', 'a2a-js'] as const, async (servers) => {
    const ours = servers['fastify-a2a'].origin
    const request = (chunks: number) => rpc(1, 'SendStreamingMessage', { message: userMessage(`stream ${chunks}`) })
    const overWebSocket = async (chunks: number) => {
      const result = await measureWsStream(wsUrl(ours), request(chunks), (frame) => frame.result?.status === 'stream_complete', STREAM_TIMEOUT_MS)
      // Every event, then the end marker.
      if (result.events !== streamEvents(chunks) + 1 || result.last.result?.status !== 'stream_complete') {
        throw new Error(`P3 WebSocket ${chunks}: ${result.events} frames, last ${JSON.stringify(result.last).slice(0, 300)}`)
      }
      return result.ms
    }
    const overSse = async (origin: string, chunks: number, exactEvents: boolean) => {
      const result = await measureSse(origin, request(chunks), JSON_HEADERS, STREAM_TIMEOUT_MS)
      const ended = result.last?.result?.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED'
      const counted = exactEvents ? result.events === streamEvents(chunks) : result.events >= chunks
      if (!ended || !counted) throw new Error(`P3 SSE ${origin} ${chunks}: ${result.events} events, last ${JSON.stringify(result.last).slice(0, 300)}`)
      return result.ms
    }
    const own = { warmups: plan.streamWarmups, repetitions: plan.streamRepetitions }
    const bindings = [
      { name: 'p3.ws', server: servers['fastify-a2a'], chunks: plan.streamChunks, ...own, run: (chunks: number) => overWebSocket(chunks) },
      { name: 'p3.sse', server: servers['fastify-a2a'], chunks: plan.streamChunks, ...own, run: (chunks: number) => overSse(ours + '/', chunks, true) },
      // Reported only, and seconds a stream: fewer runs.
      { name: 'p3.peer', server: servers['a2a-js'], chunks: plan.peerStreamChunks, warmups: 1, repetitions: plan.repetitions, run: (chunks: number) => overSse(servers['a2a-js'].origin + PEER_JSONRPC_PATH, chunks, false) }
    ] as const
    const failures: Record<string, string> = {}
    // A stream that fails (STREAM_LAGGED, say) is a result to report, not a reason to stop the bench.
    const attempt = async (binding: typeof bindings[number], chunks: number): Promise<number | undefined> => {
      if (failures[binding.name] !== undefined) return undefined
      try {
        return await binding.run(chunks)
      } catch (error) {
        failures[binding.name] = error instanceof Error ? error.message : String(error)
        return undefined
      }
    }
    // Warm-up: streams of the smaller length. One left this project's first measured 10k stream
    // still compiling (130–140 ms on three full runs, against 60–95 ms once warm).
    for (const binding of bindings) {
      for (let i = 0; i < binding.warmups; i++) await attempt(binding, binding.chunks[0])
    }
    const samples = new Samples<StreamFigureName>()
    const repetitions = Math.max(...bindings.map(binding => binding.repetitions))
    for (let rep = 0; rep < repetitions; rep++) {
      for (const binding of bindings) {
        if (rep >= binding.repetitions) continue
        const [small, large] = binding.chunks
        const smallMs = await attempt(binding, small)
        const cpuBefore = await binding.server.cpu()
        const largeMs = await attempt(binding, large)
        if (smallMs === undefined || largeMs === undefined) continue
        samples.add(`${binding.name}.cpu`, cpuPerCall(cpuBefore, await binding.server.cpu(), streamEvents(large)))
        samples.add(`${binding.name}.small.ms`, smallMs)
        samples.add(`${binding.name}.large.ms`, largeMs)
        samples.add(`${binding.name}.ratio`, largeMs / smallMs)
        samples.add(`${binding.name}.eventsPerSec`, streamEvents(large) / (largeMs / 1000))
      }
    }
    return { figures: samples.figures(), failures }
  })
}

// ---- P4: idle WebSocket connections ---------------------------------------------------------

export type IdleFigureName =
  | 'p4.ours.small.heap' | 'p4.ours.small.rss' | 'p4.ours.large.heap' | 'p4.ours.large.rss' | 'p4.ours.getTaskP99'
  | 'p4.ceiling.small.heap' | 'p4.ceiling.small.rss' | 'p4.ceiling.large.heap' | 'p4.ceiling.large.rss'

/** Handshakes in progress at once while the idle connections are opened. */
const OPENING_PARALLEL = 64
/** Time for the garbage of the handshakes to become collectable before memory is read. */
const SETTLE_MS = 1000

export async function idleConnections (plan: Plan): Promise<Record<IdleFigureName, Figure>> {
  const samples = new Samples<IdleFigureName>()
  const [small, large] = plan.idleCounts
  for (let rep = 0; rep < plan.repetitions; rep++) {
    for (const kind of plan.idleCeiling ? ['fastify-a2a', 'bare-ws'] as const : ['fastify-a2a'] as const) {
      // A fresh server each time: its baseline is not what an earlier rep left behind.
      await withServers([kind], async (servers) => {
        const server = servers[kind]
        const url = kind === 'fastify-a2a' ? wsUrl(server.origin) : server.origin.replace(/^http/, 'ws')
        const name = kind === 'fastify-a2a' ? 'p4.ours' : 'p4.ceiling'
        // One connection and call first, so that what is loaded once is in the baseline.
        const warm = await openSocket(url)
        await sequentialLatencies(warm, (id) => rpc(id, 'SendMessage', { message: userMessage('hello') }), () => {}, 10)
        await closeSocket(warm)
        await sleep(SETTLE_MS)
        const baseline = await server.memory()
        const held = await openIdle(url, small, OPENING_PARALLEL)
        try {
          await sleep(SETTLE_MS)
          const atSmall = await server.memory()
          samples.add(`${name}.small.heap`, (atSmall.heapUsed - baseline.heapUsed) / small)
          samples.add(`${name}.small.rss`, (atSmall.rss - baseline.rss) / small)
          held.push(...await openIdle(url, large - small, OPENING_PARALLEL))
          await sleep(SETTLE_MS)
          const atLarge = await server.memory()
          samples.add(`${name}.large.heap`, (atLarge.heapUsed - baseline.heapUsed) / large)
          samples.add(`${name}.large.rss`, (atLarge.rss - baseline.rss) / large)
          if (kind === 'fastify-a2a') samples.add('p4.ours.getTaskP99', await getTaskP99(url, plan.getTaskCalls))
        } finally {
          await dropAll(held)
        }
      })
    }
  }
  return samples.figures()
}

/** GetTask of a completed task, call after call on a connection opened now. */
async function getTaskP99 (url: string, calls: number): Promise<number> {
  const socket = await openSocket(url)
  try {
    const [created] = await new Promise<any[]>((resolve, reject) => {
      socket.once('message', (data) => resolve([JSON.parse(data.toString())]))
      socket.once('error', reject)
      socket.send(rpc(0, 'SendMessage', { message: userMessage('hello') }))
    })
    const taskId = created.result?.task?.id
    if (typeof taskId !== 'string') throw new Error(`P4: no task created: ${JSON.stringify(created).slice(0, 300)}`)
    const latencies = await sequentialLatencies(socket, (id) => rpc(id, 'GetTask', { id: taskId }), (reply) => {
      if (reply.result?.id !== taskId) throw new Error(`P4 GetTask: ${JSON.stringify(reply).slice(0, 300)}`)
    }, calls)
    return percentile(latencies, 0.99)
  } finally {
    await closeSocket(socket)
  }
}
