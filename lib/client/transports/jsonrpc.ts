// The JSON-RPC binding over fetch (spec §9): one POST per call, SSE for the two streams.
import type { StreamResponse } from '../../schema/wire.js'
import { deadline, type Deadline } from '../deadline.js'
import { InvalidResponseError, UnexpectedStatusError, errorFromJsonRpc, parseBody, type JsonRpcErrorObject } from '../errors.js'
import { timeoutOption } from '../options.js'
import { maxEventSizeOption, type SseEvent } from '../sse.js'
import { streamEvent, type CallOptions, type StreamMethod, type Transport, type UnaryMethod } from '../transport.js'
import { fetcher, readText, requestHeaders, send, sseStream, type Fetch, type HttpTransportOptions } from './http.js'

export const JSONRPC_BINDING = 'JSONRPC'

interface JsonRpcResponse {
  result?: unknown
  error?: JsonRpcErrorObject
}

function isResponse (body: unknown): body is JsonRpcResponse {
  return typeof body === 'object' && body !== null && (body as { jsonrpc?: unknown }).jsonrpc === '2.0'
}

/** The result of a JSON-RPC answer, or the error it carries thrown. An SSE event's `status` is the stream's, 200. */
function resultOf (body: unknown, status = 200, challenge?: string): unknown {
  // A gateway's refusal says nothing in JSON-RPC terms: its status is the answer.
  if (status === 401 || status === 403) throw new UnexpectedStatusError(status, body, challenge)
  const ok = status >= 200 && status < 300
  if (isResponse(body) && typeof body.error?.code === 'number') throw errorFromJsonRpc(body.error, ok ? undefined : status)
  if (!ok) throw new UnexpectedStatusError(status, body, challenge)
  if (!isResponse(body) || !Object.hasOwn(body, 'result')) throw new InvalidResponseError('the answer is not a JSON-RPC response')
  return body.result
}

async function answerOf (response: Response, call: Deadline): Promise<unknown> {
  return resultOf(parseBody(await readText(response, call)), response.status, response.headers.get('www-authenticate') ?? undefined)
}

export class JsonRpcTransport implements Transport {
  readonly binding = JSONRPC_BINDING
  readonly url: string
  readonly #options: HttpTransportOptions
  readonly #fetch: Fetch
  readonly #maxEventSize: number
  #nextId = 0

  constructor (options: HttpTransportOptions) {
    this.#options = options
    this.url = options.url
    this.#fetch = fetcher(options)
    this.#maxEventSize = maxEventSizeOption(options.maxEventSize)
    timeoutOption('timeout', options.timeout)
  }

  async call (method: UnaryMethod, params: object, options: CallOptions = {}): Promise<unknown> {
    const call = deadline(options, this.#options.timeout)
    try {
      const response = await this.#post(method, params, options, 'application/json', call)
      return await answerOf(response, call)
    } finally {
      call.dispose()
    }
  }

  stream (method: StreamMethod, params: object, options: CallOptions = {}): AsyncIterableIterator<StreamResponse> {
    return sseStream({
      open: (call) => this.#post(method, params, options, 'text/event-stream, application/json', call),
      decode: (event: SseEvent) => streamEvent(resultOf(JSON.parse(event.data))),
      refused: async (response, call) => {
        await answerOf(response, call)
        throw new InvalidResponseError(`${method} was answered without an event stream`)
      },
      maxEventSize: this.#maxEventSize
    }, options)
  }

  async close (): Promise<void> {}

  #post (method: string, params: object, options: CallOptions, accept: string, call: Deadline): Promise<Response> {
    return send(this.#fetch, this.url, {
      method: 'POST',
      headers: requestHeaders(this.#options, options, { 'content-type': 'application/json', accept }),
      body: JSON.stringify({ jsonrpc: '2.0', id: ++this.#nextId, method, params })
    }, call)
  }
}
