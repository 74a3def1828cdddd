// Agent card signatures (spec §8.4): a JWS per key over the RFC 8785 form of the card
// without `signatures`, with a detached payload, so a card can carry one signature per
// key while keys rotate.
//
// What is signed is the card without `signatures`, with the proto presence rules of §8.4
// applied (`withPresenceRules`): a plain field holding its default, such as the empty scope
// list of a bearer requirement, is left out of the payload though the card serves it.
import { base64url, decodeProtectedHeader, FlattenedSign, flattenedVerify, type CryptoKey, type FlattenedVerifyGetKey, type JWK, type JWSHeaderParameters, type KeyObject } from 'jose'
import type { Static } from 'typebox'
import type { AgentCardSignature as AgentCardSignatureSchema } from '../schema/wire.js'
import { canonicalize } from './jcs.js'
import { withPresenceRules } from './presence.js'

export type AgentCardSignature = Static<typeof AgentCardSignatureSchema>

/** ES256 (P-256), or Ed25519 named `EdDSA` (RFC 8037) or `Ed25519` (RFC 9864). */
export type CardSigningAlgorithm = 'ES256' | 'EdDSA' | 'Ed25519'

// Verification accepts only these, so a key resolver is never asked for an HMAC or RSA key.
const ALGORITHMS: CardSigningAlgorithm[] = ['ES256', 'EdDSA', 'Ed25519']

/** A card as served or as given to the plugin; every field but `signatures` is signed. */
export interface SignableCard {
  signatures?: AgentCardSignature[]
  [field: string]: unknown
}

export interface CardSigningOptions {
  /** The private key: a Web Crypto key, a Node.js KeyObject or a private JWK. */
  key: CryptoKey | KeyObject | JWK
  /** Key id put in the protected header; verifiers pick the public key by it. */
  kid: string
  alg: CardSigningAlgorithm
  /** HTTPS URL of a JWK Set holding the public key, put in the protected header. */
  jku?: string
}

/** A public key (Web Crypto, KeyObject or JWK), or a resolver such as jose's createLocalJWKSet / createRemoteJWKSet. */
export type CardVerificationKey = CryptoKey | KeyObject | JWK | FlattenedVerifyGetKey

export interface VerifiedCardSignature {
  /** Position in `card.signatures`. */
  index: number
  protectedHeader: JWSHeaderParameters
}

export interface CardSignatureFailure {
  /** Position in `card.signatures`. */
  index: number
  reason: string
}

/** No signature of the card verifies; `failures` says why, per signature. */
export class AgentCardSignatureError extends Error {
  readonly code = 'A2A_ERR_CARD_SIGNATURE'
  readonly failures: CardSignatureFailure[]

  constructor (message: string, failures: CardSignatureFailure[]) {
    super(message)
    this.name = 'AgentCardSignatureError'
    this.failures = failures
  }
}

/**
 * Returns a copy of `card` with one more signature in `signatures` (those it has are kept).
 * The protected header is `{ alg, kid, typ: "JOSE", jku? }`.
 */
export async function signAgentCard<T extends SignableCard> (card: T, options: CardSigningOptions): Promise<T> {
  const { key, kid, alg, jku } = options
  if (!ALGORITHMS.includes(alg)) throw new TypeError(`signAgentCard: alg must be one of ${ALGORITHMS.join(', ')}`)
  if (typeof kid !== 'string' || kid === '') throw new TypeError('signAgentCard: kid must be a non-empty string')
  // RFC 7515 §4.1.2: the JWK Set must be fetched over a channel with integrity protection.
  if (jku !== undefined && !(URL.canParse(jku) && new URL(jku).protocol === 'https:')) throw new TypeError('signAgentCard: jku must be an https URL')
  const header: JWSHeaderParameters = jku === undefined ? { alg, kid, typ: 'JOSE' } : { alg, kid, typ: 'JOSE', jku }
  const jws = await new FlattenedSign(payloadOf(card)).setProtectedHeader(header).sign(key)
  const signature: AgentCardSignature = { protected: jws.protected as string, signature: jws.signature }
  return { ...card, signatures: [...(card.signatures ?? []), signature] }
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
export async function verifyAgentCard (card: SignableCard, key: CardVerificationKey): Promise<VerifiedCardSignature[]> {
  const signatures: unknown = card.signatures
  if (!Array.isArray(signatures) || signatures.length === 0) throw new AgentCardSignatureError('Agent card has no signatures', [])
  const payload = base64url.encode(payloadOf(card))
  const outcomes = await Promise.all(signatures.map(async (signature: unknown, index) => {
    try {
      return { index, protectedHeader: await verifyOne(signature, payload, key) }
    } catch (err) {
      return { index, reason: err instanceof Error ? err.message : String(err) }
    }
  }))
  const verified = outcomes.filter((outcome): outcome is VerifiedCardSignature => 'protectedHeader' in outcome)
  if (verified.length > 0) return verified
  const failures = outcomes as CardSignatureFailure[]
  throw new AgentCardSignatureError(
    `No agent card signature verifies: ${failures.map(failure => `signatures[${failure.index}]: ${failure.reason}`).join('; ')}`,
    failures
  )
}

async function verifyOne (signature: unknown, payload: string, key: CardVerificationKey): Promise<JWSHeaderParameters> {
  if (typeof signature !== 'object' || signature === null) throw new TypeError('not a JWS object')
  const { protected: protectedHeader, signature: value, header } = signature as Partial<AgentCardSignature>
  if (typeof protectedHeader !== 'string') throw new TypeError('no protected header')
  // §8.4 puts alg and kid in the protected header; jose would also take them from `header`.
  const decoded = decodeProtectedHeader(signature)
  if (typeof decoded.alg !== 'string') throw new TypeError('protected header has no alg')
  if (typeof decoded.kid !== 'string') throw new TypeError('protected header has no kid')
  const result = await flattenedVerify(
    { protected: protectedHeader, signature: value as string, header: header as JWSHeaderParameters | undefined, payload },
    key,
    { algorithms: ALGORITHMS }
  )
  return result.protectedHeader as JWSHeaderParameters
}

/** The JWS payload: the RFC 8785 form of the card without `signatures`, under the presence rules. */
function payloadOf (card: SignableCard): Uint8Array {
  const { signatures, ...unsigned } = card
  return new TextEncoder().encode(canonicalize(withPresenceRules(unsigned)))
}
