// The handler's allocation per call: the bytes V8 allocates for one SendMessage of the echo
// agent on the memory store, called in-process 64 at a time (no sockets, no bindings). Unlike
// a timing it does not move with the machine. It is read off the heap in a child process
// whose young generation is large enough (512 MB), and emptied before each count, that no
// garbage collection runs while it counts: what the heap grew by is what the calls allocated.
// Each sample is 12,000 calls, after 20,000 of warm-up (the JIT, and a memory store holding
// its 10,000 tasks).
//
// And what of it the scavenges promote to the old generation, where only a full collection
// frees it: the calls arrive as a WebSocket read delivers them, 64 at a time on a turn of the
// event loop of their own, in a second child with V8's default heap. The tasks the store keeps
// are promoted by right; anything more is garbage kept alive by the old generation.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { PerformanceObserver } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import v8, { GCProfiler } from 'node:v8'
import type { Row } from './report.js'
import { figure, type Figure } from './harness/stats.js'
import type { Plan } from './scenarios.js'
import type { SendMessageResponse } from '../lib/schema/wire.js'

const WARM_UP_CALLS = 20_000
const CALLS = 12_000
const IN_FLIGHT = 64
/** Bursts of IN_FLIGHT calls per promotion sample: 96,000 calls, about fifty scavenges. */
const BURSTS = 1_500

/** The echo agent's SendMessage, on the bench server's handler: `send(i)` sends message i, `check` its answer. */
async function echoCalls (count: number): Promise<{
  send: (i: number) => Promise<SendMessageResponse>
  check: (answer: SendMessageResponse) => void
  close: () => Promise<void>
}> {
  const { app } = await import('./servers/fastify-a2a.js')
  const fastify = await app()
  const { handler } = fastify.a2a
  const context = { binding: 'bench', method: 'SendMessage', serviceParams: {}, tenant: '', extensions: [] }
  const messages = Array.from({ length: count }, (_, i) => ({
    message: { messageId: `m${i}`, role: 'ROLE_USER' as const, parts: [{ text: 'hello' }] }
  }))
  return {
    send: (i) => handler.sendMessage(messages[i] as typeof messages[number], context),
    check (answer) {
      if (answer.task?.status.state !== 'TASK_STATE_COMPLETED') throw new Error(`unexpected answer ${JSON.stringify(answer)}`)
    },
    close: async () => { await fastify.close() }
  }
}

/** Runs in the child: prints the bytes allocated per call in each sample, as JSON. */
async function measureAllocation (samples: number): Promise<void> {
  const { send, check, close } = await echoCalls(WARM_UP_CALLS + samples * CALLS)
  let next = 0
  const calls = async (count: number) => {
    let left = count
    const caller = async () => {
      while (left-- > 0) check(await send(next++))
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, caller))
  }
  let collections = 0
  new PerformanceObserver(list => { collections += list.getEntries().length }).observe({ entryTypes: ['gc'] })
  await calls(WARM_UP_CALLS)
  const bytesPerCall: number[] = []
  for (let sample = 0; sample < samples; sample++) {
    // Each count starts from an empty young generation; the collections before it are done
    // with (their entries arrive on a later turn).
    ;(globalThis as { gc?: () => void }).gc?.()
    await sleep(20)
    collections = 0
    const before = v8.getHeapStatistics().used_heap_size
    await calls(CALLS)
    const after = v8.getHeapStatistics().used_heap_size
    await sleep(20)
    if (collections > 0) throw new Error('a garbage collection ran while counting: the count is not the allocation')
    bytesPerCall.push((after - before) / CALLS)
  }
  await close()
  console.log(JSON.stringify({ bytesPerCall }))
}

const oldSpaceUsed = (spaces: Array<{ spaceName: string, spaceUsedSize: number }>) =>
  spaces.find(space => space.spaceName === 'old_space')?.spaceUsedSize ?? 0

/** Runs in the child: prints the bytes the scavenges promoted per call in each sample, as JSON. */
async function measurePromotion (samples: number): Promise<void> {
  const warmUpBursts = Math.ceil(WARM_UP_CALLS / IN_FLIGHT)
  const { send, check, close } = await echoCalls((warmUpBursts + samples * BURSTS) * IN_FLIGHT)
  const call = async (i: number) => { check(await send(i)) }
  let next = 0
  // Each burst on a turn of its own, as the frames of one read of a WebSocket.
  const burst = () => new Promise<void>((resolve, reject) => {
    setImmediate(() => { Promise.all(Array.from({ length: IN_FLIGHT }, () => call(next++))).then(() => resolve(), reject) })
  })
  for (let bursts = 0; bursts < warmUpBursts; bursts++) await burst()
  const bytesPerCall: number[] = []
  for (let sample = 0; sample < samples; sample++) {
    const profiler = new GCProfiler()
    profiler.start()
    for (let bursts = 0; bursts < BURSTS; bursts++) await burst()
    const { statistics } = profiler.stop()
    let promoted = 0
    for (const collection of statistics) {
      if (collection.gcType !== 'Scavenge') continue
      promoted += Math.max(0, oldSpaceUsed(collection.afterGC.heapSpaceStatistics) - oldSpaceUsed(collection.beforeGC.heapSpaceStatistics))
    }
    bytesPerCall.push(promoted / (BURSTS * IN_FLIGHT))
  }
  await close()
  console.log(JSON.stringify({ bytesPerCall }))
}

/** A child's samples: `flags` for its heap, `mode` what it measures. */
async function child (flags: string[], mode: 'allocation' | 'promotion', samples: number): Promise<number[]> {
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
    execFile(process.execPath, [...flags, fileURLToPath(import.meta.url), '--child', mode, String(samples)],
      { timeout: 120_000 }, (error, stdout) => { if (error !== null) reject(error); else resolve({ stdout }) })
  })
  return (JSON.parse(stdout) as { bytesPerCall: number[] }).bytesPerCall
}

/** The scenario: the child's samples, and their row. */
export async function handlerAllocation (plan: Plan): Promise<{ figures: Record<string, Figure>, rows: Row[] }> {
  const samples = plan.repetitions
  const allocated = figure(await child(['--expose-gc', '--min-semi-space-size=512', '--max-semi-space-size=512'], 'allocation', samples))
  const promoted = figure(await child([], 'promotion', samples))
  const row = (scenario: string, bytes: Figure): Row =>
    ({ scenario, ours: `${(bytes.median / 1024).toFixed(2)} KiB`, peer: '', ceiling: '', ratio: '', target: 'reported', verdict: '—' })
  return {
    figures: { 'alloc.sendMessage': allocated, 'alloc.promoted': promoted },
    rows: [
      row('Handler: bytes allocated per SendMessage (echo agent, memory store, in-process)', allocated),
      row('Handler: bytes promoted to the old generation per SendMessage (bursts of 64)', promoted)
    ]
  }
}

if (process.argv[2] === '--child') {
  const samples = Number(process.argv[4])
  if (process.argv[3] === 'promotion') await measurePromotion(samples)
  else await measureAllocation(samples)
}
