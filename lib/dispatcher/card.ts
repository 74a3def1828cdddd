// The agent card (spec §8): served at the host root, with the interfaces this instance
// serves, ETag / Cache-Control, and 304 on a matching If-None-Match.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AgentCard, AgentCardInput, AgentInterface } from '../schema/wire.js'

export const AGENT_CARD_PATH = '/.well-known/agent-card.json'
export const PROTOCOL_VERSION = '1.0'

/** Where the client reached this server, as Fastify reads it (`trustProxy` included): `http(s)://host`. */
export const requestOrigin = (request: FastifyRequest): string => `${request.protocol}://${request.host}`

/** One binding this instance serves: its card name and how its URL derives from the base. */
export interface ServedBinding {
  protocolBinding: string
  /** The binding's absolute URL from the HTTP base URL (`http(s)://host/prefix`). */
  url (httpBase: string): string
}

/** The card with `supportedInterfaces` for the bindings served at `httpBase`, the user's own after ours. */
export function buildCard (input: AgentCardInput, bindings: readonly ServedBinding[], httpBase: string): AgentCard {
  const served: AgentInterface[] = bindings.map(binding => ({
    url: binding.url(httpBase),
    protocolBinding: binding.protocolBinding,
    protocolVersion: PROTOCOL_VERSION
  }))
  return { ...input, supportedInterfaces: [...served, ...(input.supportedInterfaces ?? [])] }
}

export interface RenderedCard {
  body: string
  etag: string
}

/** A strong ETag of a body: its SHA-256, shortened. */
export const etagOf = (body: string): string => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`

export function renderCard (card: AgentCard): RenderedCard {
  const body = JSON.stringify(card)
  return { body, etag: etagOf(body) }
}

/** Does If-None-Match name this ETag (weak comparison, RFC 9110 §13.1.2)? */
export function etagMatches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  return ifNoneMatch.split(',').some(tag => {
    const trimmed = tag.trim()
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag
  })
}

export interface CardRouteOptions {
  /** The card for a request: fixed when a public URL is configured, else built from the request's origin. */
  cardFor (request: FastifyRequest): RenderedCard | Promise<RenderedCard>
  /** Cache-Control max-age, in seconds. */
  maxAge: number
}

export async function cardRoute (fastify: FastifyInstance, options: CardRouteOptions): Promise<void> {
  fastify.get(AGENT_CARD_PATH, async (request, reply) => {
    const { body, etag } = await options.cardFor(request)
    reply.header('etag', etag).header('cache-control', `public, max-age=${options.maxAge}`)
    if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send()
    return reply.type('application/json').send(body)
  })
}
