// Fastify logs each request's URL ("incoming request") before any hook runs, so an API key
// sent in the query string (`auth.apiKey.in: 'query'`) would be written to the log. The A2A
// routes log requests through the instance's own `req` serializer with that value replaced.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'

// What pino and Fastify type a serializer as: it returns whatever is to be logged.
type RequestSerializer = (request: FastifyRequest) => any // eslint-disable-line @typescript-eslint/no-explicit-any

export const REDACTED = 'REDACTED'

/** Fastify's own `req` serializer, for a logger that has none. */
const fastifyRequest: RequestSerializer = (request) => ({
  method: request.method,
  url: request.url,
  version: request.headers['accept-version'],
  host: request.host,
  remoteAddress: request.ip,
  remotePort: request.socket?.remotePort
})

/** The logger's `req` serializer, given the request with the query parameter `name` redacted. */
export function redactingRequestSerializer (logger: FastifyBaseLogger, name: string): RequestSerializer {
  const serializers = (logger as unknown as Record<symbol, Record<string, RequestSerializer> | undefined>)[Symbol.for('pino.serializers')]
  const serialize = serializers?.req ?? fastifyRequest
  return (request) => {
    const url = withoutParameter(request.url, name)
    return serialize(url === request.url ? request : Object.create(request, { url: { value: url } }) as FastifyRequest)
  }
}

/** `url` with every value of the query parameter `name` (compared decoded) replaced. */
export function withoutParameter (url: string, name: string): string {
  const start = url.indexOf('?')
  if (start === -1) return url
  const pairs = url.slice(start + 1).split('&')
  let changed = false
  for (let index = 0; index < pairs.length; index++) {
    const pair = pairs[index] as string
    const equals = pair.indexOf('=')
    if (decoded(equals === -1 ? pair : pair.slice(0, equals)) !== name) continue
    pairs[index] = `${pair.slice(0, equals === -1 ? pair.length : equals)}=${REDACTED}`
    changed = true
  }
  return changed ? `${url.slice(0, start + 1)}${pairs.join('&')}` : url
}

function decoded (text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return text
  }
}
