// What the two HTTP transports share: fetch with the call's deadline, service parameters
// as headers, and a stream read from a `text/event-stream` body.
import type { StreamResponse } from '../../schema/wire.js'
import { Channel } from '../channel.js'
import { deadline, type Deadline } from '../deadline.js'
import { ConnectionError, InvalidResponseError, StreamIncompleteError } from '../errors.js'
import { readSse, type SseEvent } from '../sse.js'
import { canEndStream, isFinalEvent, mergeServiceParams, taskIdOf, withVersion, type CallOptions, type TransportOptions } from '../transport.js'

export interface HttpTransportOptions extends TransportOptions {
  /** The interface's URL (for HTTP+JSON the base the routes hang off, tenant excluded). */
  url: string
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch
  /**
   * The largest event of a stream, in characters of its lines (line ends not counted);
   * a larger one, or a line that never ends, fails the stream with InvalidResponseError.
   * `Infinity`: no limit. Default 64 Mi (67,108,864), 16 times the server's `bodyLimit`.
   */
  maxEventSize?: number
}

export type Fetch = typeof fetch

/** The fetch to call: the injected one, or the global one looked up at call time (a browser's must be called unbound from window). */
export function fetcher (options: HttpTransportOptions): Fetch {
  return options.fetch ?? ((input, init) => globalThis.fetch(input, init))
}

/** The transport's service parameters, the call's over them, then the binding's own headers. */
export function requestHeaders (options: HttpTransportOptions, call: CallOptions, extra: Record<string, string>): Record<string, string> {
  return { ...withVersion(mergeServiceParams(options.serviceParams, call.serviceParams)), ...extra }
}

/** fetch under the call's deadline: an abort rethrows its reason, anything else is a ConnectionError. */
export async function send (fetchFn: Fetch, url: string, init: RequestInit, call: Deadline): Promise<Response> {
  try {
    return await fetchFn(url, { ...init, signal: call.signal })
  } catch (error) {
    if (call.signal.aborted) throw call.signal.reason
    throw new ConnectionError(`could not reach ${url}`, { cause: error })
  }
}

export async function readText (response: Response, call: Deadline): Promise<string> {
  try {
    return await response.text()
  } catch (error) {
    if (call.signal.aborted) throw call.signal.reason
    throw new ConnectionError('the connection dropped while the answer was read', { cause: error })
  }
}

export function isEventStream (response: Response): boolean {
  return (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream')
}

export interface SseStreamSpec {
  /** Sends the request. */
  open (call: Deadline): Promise<Response>
  /** One event's payload, or the error it carries thrown. */
  decode (event: SseEvent): StreamResponse
  /** A response that is not an event stream: throws the error it carries. */
  refused (response: Response, call: Deadline): Promise<never>
  /** The largest event, checked (maxEventSizeOption). */
  maxEventSize: number
}

/**
 * A stream over SSE, started at once. It ends after a final event, or with the body; a
 * body that breaks off, or ends before the task reached a state a stream may end in, is a
 * StreamIncompleteError.
 */
export function sseStream (spec: SseStreamSpec, options: CallOptions): AsyncIterableIterator<StreamResponse> {
  let call: Deadline
  try {
    call = deadline(options)
  } catch (error) {
    // A stream's errors, this one too, surface from its iterator.
    return Channel.failed(error)
  }
  const response = spec.open(call)
  // Until the reader asks, a failure waits for it.
  response.catch(() => {})
  let started = false
  async function * events (): AsyncGenerator<StreamResponse> {
    started = true
    let received = 0
    let taskId: string | undefined
    let last: StreamResponse | undefined
    try {
      const answer = await response
      if (!answer.ok || !isEventStream(answer) || answer.body === null) await spec.refused(answer, call)
      try {
        for await (const sse of readSse(answer.body as ReadableStream<Uint8Array>, { maxEventSize: spec.maxEventSize })) {
          const event = spec.decode(sse)
          received++
          taskId ??= taskIdOf(event)
          last = event
          yield event
          if (isFinalEvent(event, received === 1)) return
        }
      } catch (error) {
        if (call.signal.aborted) throw call.signal.reason
        if (error instanceof Error && error.name === 'SyntaxError') throw new InvalidResponseError(`an event of the stream is not JSON: ${error.message}`)
        if (!(error instanceof TypeError)) throw error
        throw new StreamIncompleteError(`the connection dropped after ${received} events, before the stream ended`, taskId, received, { cause: error })
      }
      if (last === undefined || !canEndStream(last, received === 1)) {
        throw new StreamIncompleteError(`the stream ended after ${received} events, before the task reached a final state`, taskId, received)
      }
    } finally {
      // Leaving early (break, return, an error) closes the request, which releases the subscription.
      stop()
    }
  }
  function stop () {
    if (!call.signal.aborted) call.abort(new DOMException('the stream was stopped', 'AbortError'))
    call.dispose()
  }
  const stream = events()
  // A generator returned before its first `next()` never runs its body, nor so its `finally`:
  // the request, sent already, is stopped here.
  const returnGenerator = stream.return.bind(stream)
  stream.return = (value) => {
    if (!started) stop()
    return returnGenerator(value)
  }
  return stream
}
