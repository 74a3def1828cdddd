// Agent card signatures (spec §8.4): a JWS per key over the RFC 8785 form of the card
// without `signatures`, with a detached payload, so a card can carry one signature per
// key while keys rotate.
//
// What is signed is the card exactly as served minus `signatures`; the proto presence rule
// of §8.4 is not applied on top. The plugin serves cards in ProtoJSON form (an optional
// field never set is absent, one set is present even when false), so signing the object
// served matches what a proto-based verifier rebuilds, as long as the card carries no empty
// lists or defaults of non-optional fields, which such a verifier would drop.
import { base64url, decodeProtectedHeader, FlattenedSign, flattenedVerify } from 'jose';
import { canonicalize } from './jcs.js';
// Verification accepts only these, so a key resolver is never asked for an HMAC or RSA key.
const ALGORITHMS = ['ES256', 'EdDSA', 'Ed25519'];
/** No signature of the card verifies; `failures` says why, per signature. */
export class AgentCardSignatureError extends Error {
    code = 'A2A_ERR_CARD_SIGNATURE';
    failures;
    constructor(message, failures) {
        super(message);
        this.name = 'AgentCardSignatureError';
        this.failures = failures;
    }
}
/**
 * Returns a copy of `card` with one more signature in `signatures` (those it has are kept).
 * The protected header is `{ alg, kid, typ: "JOSE", jku? }`.
 */
export async function signAgentCard(card, options) {
    const { key, kid, alg, jku } = options;
    if (!ALGORITHMS.includes(alg))
        throw new TypeError(`signAgentCard: alg must be one of ${ALGORITHMS.join(', ')}`);
    if (typeof kid !== 'string' || kid === '')
        throw new TypeError('signAgentCard: kid must be a non-empty string');
    // RFC 7515 §4.1.2: the JWK Set must be fetched over a channel with integrity protection.
    if (jku !== undefined && !(URL.canParse(jku) && new URL(jku).protocol === 'https:'))
        throw new TypeError('signAgentCard: jku must be an https URL');
    const header = jku === undefined ? { alg, kid, typ: 'JOSE' } : { alg, kid, typ: 'JOSE', jku };
    const jws = await new FlattenedSign(payloadOf(card)).setProtectedHeader(header).sign(key);
    const signature = { protected: jws.protected, signature: jws.signature };
    return { ...card, signatures: [...(card.signatures ?? []), signature] };
}
/**
 * Checks every signature of `card` against `key` and returns those that verify. Throws an
 * AgentCardSignatureError when the card has none or none verifies.
 *
 * A signature verifies when its protected header names `alg` (ES256, EdDSA or Ed25519) and
 * `kid`, and the signature is valid over the card without `signatures`. `jku` is not
 * fetched: a resolver that honours it must check the URL against the ones it trusts. The
 * key or resolver decides which keys are current; give it none that is expired or revoked.
 */
export async function verifyAgentCard(card, key) {
    const signatures = card.signatures;
    if (!Array.isArray(signatures) || signatures.length === 0)
        throw new AgentCardSignatureError('Agent card has no signatures', []);
    const payload = base64url.encode(payloadOf(card));
    const outcomes = await Promise.all(signatures.map(async (signature, index) => {
        try {
            return { index, protectedHeader: await verifyOne(signature, payload, key) };
        }
        catch (err) {
            return { index, reason: err instanceof Error ? err.message : String(err) };
        }
    }));
    const verified = outcomes.filter((outcome) => 'protectedHeader' in outcome);
    if (verified.length > 0)
        return verified;
    const failures = outcomes;
    throw new AgentCardSignatureError(`No agent card signature verifies: ${failures.map(failure => `signatures[${failure.index}]: ${failure.reason}`).join('; ')}`, failures);
}
async function verifyOne(signature, payload, key) {
    if (typeof signature !== 'object' || signature === null)
        throw new TypeError('not a JWS object');
    const { protected: protectedHeader, signature: value, header } = signature;
    if (typeof protectedHeader !== 'string')
        throw new TypeError('no protected header');
    // §8.4 puts alg and kid in the protected header; jose would also take them from `header`.
    const decoded = decodeProtectedHeader(signature);
    if (typeof decoded.alg !== 'string')
        throw new TypeError('protected header has no alg');
    if (typeof decoded.kid !== 'string')
        throw new TypeError('protected header has no kid');
    const result = await flattenedVerify({ protected: protectedHeader, signature: value, header: header, payload }, key, { algorithms: ALGORITHMS });
    return result.protectedHeader;
}
/** The JWS payload: the card's RFC 8785 form without `signatures`. */
function payloadOf(card) {
    const { signatures, ...unsigned } = card;
    return new TextEncoder().encode(canonicalize(unsigned));
}
//# sourceMappingURL=signing.js.map