// What a test reads of a Fastify logger's output and of the process's warnings.
import { Writable } from 'node:stream'
import type { Test } from 'tap'

/** A stream to give a Fastify logger, and the lines written to it so far (one JSON entry each). */
export function logLines (): { stream: Writable, lines: string[] } {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(...chunk.toString().split('\n').filter(Boolean)); done() } })
  return { stream, lines }
}

/** The names of the warnings the process emits (e.g. MaxListenersExceededWarning) until `t` ends. */
export function processWarnings (t: Test): string[] {
  const names: string[] = []
  const onWarning = (warning: Error) => { names.push(warning.name) }
  process.on('warning', onWarning)
  t.teardown(() => { process.off('warning', onWarning) })
  return names
}
