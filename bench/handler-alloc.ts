// The handler's allocation per call: the bytes V8 allocates for one SendMessage of the echo
// agent on the memory store, called in-process 64 at a time (no sockets, no bindings). Unlike
// a timing it does not move with the machine. It is read off the heap in a child process
// whose young generation is large enough (512 MB), and emptied before each count, that no
// garbage collection runs while it counts: what the heap grew by is what the calls allocated.
// Each sample is 12,000 calls, after 20,000 of warm-up (the JIT, and a memory store holding
// its 10,000 tasks).
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { PerformanceObserver } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import v8 from 'node:v8'
import type { Row } from './report.js'
import { figure, type Figure } from './harness/stats.js'
import type { Plan } from './scenarios.js'

const WARM_UP_CALLS = 20_000
const CALLS = 12_000
const IN_FLIGHT = 64

/** Runs in the child: prints the bytes allocated per call in each sample, as JSON. */
async function measure (samples: number): Promise<void> {
  const { app } = await import('./servers/fastify-a2a.js')
  const fastify = await app()
  const { handler } = fastify.a2a
  const context = { binding: 'bench', method: 'SendMessage', serviceParams: {}, tenant: '', extensions: [] }
  const messages = Array.from({ length: WARM_UP_CALLS + samples * CALLS }, (_, i) => ({
    message: { messageId: `m${i}`, role: 'ROLE_USER' as const, parts: [{ text: 'hello' }] }
  }))
  let next = 0
  const calls = async (count: number) => {
    let left = count
    const caller = async () => {
      while (left-- > 0) {
        const answer = await handler.sendMessage(messages[next++] as typeof messages[number], context)
        if (answer.task?.status.state !== 'TASK_STATE_COMPLETED') throw new Error(`unexpected answer ${JSON.stringify(answer)}`)
      }
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
  await fastify.close()
  console.log(JSON.stringify({ bytesPerCall }))
}

/** The scenario: the child's samples, and their row. */
export async function handlerAllocation (plan: Plan): Promise<{ figures: Record<string, Figure>, rows: Row[] }> {
  const samples = plan.repetitions
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '--min-semi-space-size=512', '--max-semi-space-size=512', fileURLToPath(import.meta.url), '--child', String(samples)],
      { timeout: 120_000 }, (error, stdout) => { if (error !== null) reject(error); else resolve({ stdout }) })
  })
  const { bytesPerCall } = JSON.parse(stdout) as { bytesPerCall: number[] }
  const allocated = figure(bytesPerCall)
  return {
    figures: { 'alloc.sendMessage': allocated },
    rows: [{
      scenario: 'Handler: bytes allocated per SendMessage (echo agent, memory store, in-process)',
      ours: `${(allocated.median / 1024).toFixed(2)} KiB`,
      peer: '',
      ceiling: '',
      ratio: '',
      target: 'reported',
      verdict: '—'
    }]
  }
}

if (process.argv[2] === '--child') await measure(Number(process.argv[3]))
