// The agent card (spec §8): served at the host root, with the interfaces this instance
// serves, ETag / Cache-Control, and 304 on a matching If-None-Match.
import { createHash } from 'node:crypto';
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';
export const PROTOCOL_VERSION = '1.0';
/** The card with `supportedInterfaces` for the bindings served at `httpBase`, the user's own after ours. */
export function buildCard(input, bindings, httpBase) {
    const served = bindings.map(binding => ({
        url: binding.url(httpBase),
        protocolBinding: binding.protocolBinding,
        protocolVersion: PROTOCOL_VERSION
    }));
    return { ...input, supportedInterfaces: [...served, ...(input.supportedInterfaces ?? [])] };
}
export function renderCard(card) {
    const body = JSON.stringify(card);
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}
/** Does If-None-Match name this ETag (weak comparison, RFC 9110 §13.1.2)? */
export function etagMatches(ifNoneMatch, etag) {
    if (ifNoneMatch === undefined)
        return false;
    return ifNoneMatch.split(',').some(tag => {
        const trimmed = tag.trim();
        return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
    });
}
export async function cardRoute(fastify, options) {
    fastify.get(AGENT_CARD_PATH, async (request, reply) => {
        const { body, etag } = await options.cardFor(request);
        reply.header('etag', etag).header('cache-control', `public, max-age=${options.maxAge}`);
        if (etagMatches(request.headers['if-none-match'], etag))
            return reply.code(304).send();
        return reply.type('application/json').send(body);
    });
}
//# sourceMappingURL=card.js.map