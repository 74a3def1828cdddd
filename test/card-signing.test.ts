// Agent card signatures (spec §8.4): ES256 and Ed25519 JWS over the RFC 8785 form of the
// card without `signatures`, the exact signing input and protected header, tampering,
// wrong keys, several signatures for key rotation, key resolvers and `jku`; the plugin signs
// only with publicUrl, so no request's Host chooses the URLs of a signed card.
import { createPublicKey, verify as cryptoVerify } from 'node:crypto'
import {
  base64url, createLocalJWKSet, exportJWK, FlattenedSign, generateKeyPair, generateSecret, type CryptoKey, type JWSHeaderParameters
} from 'jose'
import Fastify from 'fastify'
import t from 'tap'
import { AgentCardSignatureError, a2aWebSocket, canonicalize, signAgentCard, verifyAgentCard, type AgentCard, type CardSigningOptions } from '../lib/index.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'

const card: AgentCard = {
  name: 'Signed agent',
  description: 'An agent whose card is signed',
  supportedInterfaces: [{ url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  provider: { organization: 'Example', url: 'https://example.com' },
  version: '1.2.3',
  // Set to false explicitly: presence is part of what is signed.
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['echo'], examples: ['héllo €'] }]
}

const es256 = await generateKeyPair('ES256')
const ed25519 = await generateKeyPair('Ed25519')

function decodeHeader (signature: { protected: string }): unknown {
  return JSON.parse(new TextDecoder().decode(base64url.decode(signature.protected)))
}

/** The JWS signing input of §8.4, built by hand: BASE64URL(protected) '.' BASE64URL(JCS(card without signatures)). */
function signingInput (signed: AgentCard, index: number): Buffer {
  const { signatures, ...unsigned } = signed
  return Buffer.from(`${signatures?.[index]?.protected}.${base64url.encode(canonicalize(unsigned))}`)
}

/** Rebuilds every object with its members in reverse order. */
function reversed (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed)
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]))
  return value
}

async function failure (promise: Promise<unknown>): Promise<AgentCardSignatureError> {
  const err = await promise.then(() => undefined, (err: unknown) => err)
  if (!(err instanceof AgentCardSignatureError)) throw new Error(`expected an AgentCardSignatureError, got ${String(err)}`)
  return err
}

t.test('ES256: the header, the shape and the signing input are exactly those of §8.4', async t => {
  const signed = await signAgentCard(card, { key: es256.privateKey, kid: 'es-1', alg: 'ES256' })
  t.equal(card.signatures, undefined, 'the input card is not changed')
  t.same({ ...signed, signatures: undefined }, { ...card, signatures: undefined }, 'every other field is kept')
  t.equal(signed.signatures?.length, 1)
  const [signature] = signed.signatures ?? []
  t.strictSame(Object.keys(signature ?? {}), ['protected', 'signature'], 'detached: no payload member')
  t.strictSame(decodeHeader(signature!), { alg: 'ES256', kid: 'es-1', typ: 'JOSE' })
  const publicKey = createPublicKey({ key: await exportJWK(es256.publicKey) as any, format: 'jwk' })
  t.ok(cryptoVerify('sha256', signingInput(signed, 0), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(base64url.decode(signature!.signature))),
    'node:crypto verifies the hand-built signing input')
  t.strictSame(await verifyAgentCard(signed, es256.publicKey), [{ index: 0, protectedHeader: { alg: 'ES256', kid: 'es-1', typ: 'JOSE' } }])
})

t.test('EdDSA and Ed25519 (the same Ed25519 key under either alg name)', async t => {
  for (const alg of ['EdDSA', 'Ed25519'] as const) {
    const signed = await signAgentCard(card, { key: ed25519.privateKey, kid: 'ed-1', alg })
    const [signature] = signed.signatures ?? []
    t.strictSame(decodeHeader(signature!), { alg, kid: 'ed-1', typ: 'JOSE' }, alg)
    const publicKey = createPublicKey({ key: await exportJWK(ed25519.publicKey) as any, format: 'jwk' })
    t.ok(cryptoVerify(null, signingInput(signed, 0), publicKey, Buffer.from(base64url.decode(signature!.signature))), `${alg}: node:crypto verifies`)
    t.strictSame(await verifyAgentCard(signed, ed25519.publicKey), [{ index: 0, protectedHeader: { alg, kid: 'ed-1', typ: 'JOSE' } }], alg)
  }
})

t.test('a private JWK signs and a public JWK verifies', async t => {
  const pair = await generateKeyPair('Ed25519', { extractable: true })
  const signed = await signAgentCard(card, { key: await exportJWK(pair.privateKey), kid: 'ed-jwk', alg: 'EdDSA' })
  t.strictSame(await verifyAgentCard(signed, await exportJWK(pair.publicKey)), [{ index: 0, protectedHeader: { alg: 'EdDSA', kid: 'ed-jwk', typ: 'JOSE' } }])
})

t.test('what the wire may change verifies; what the card says may not', async t => {
  const signed = await signAgentCard(card, { key: es256.privateKey, kid: 'es-1', alg: 'ES256' })
  t.equal((await verifyAgentCard(JSON.parse(JSON.stringify(signed)), es256.publicKey)).length, 1, 'a JSON round trip')
  t.equal((await verifyAgentCard(reversed(signed) as AgentCard, es256.publicKey)).length, 1, 'members in another order, at every depth')
  t.equal((await verifyAgentCard(JSON.parse(JSON.stringify(signed, null, 2)), es256.publicKey)).length, 1, 'whitespace')

  const tampered: Array<[string, AgentCard]> = [
    ['a field changed', { ...signed, name: 'Evil agent' }],
    ['a nested field changed', { ...signed, supportedInterfaces: [{ ...card.supportedInterfaces[0]!, url: 'https://evil.example.com/a2a' }] }],
    ['a field added', { ...signed, documentationUrl: 'https://example.com/docs' }],
    ['an explicit false dropped', { ...signed, capabilities: { streaming: true } }],
    ['array order changed', { ...signed, defaultOutputModes: ['application/json', 'text/plain'] }],
    ['a string re-encoded (NFD)', { ...signed, skills: [{ ...card.skills[0]!, examples: ['héllo €'.normalize('NFD')] }] }]
  ]
  for (const [what, changed] of tampered) {
    const err = await failure(verifyAgentCard(changed, es256.publicKey))
    t.equal(err.message, 'No agent card signature verifies: signatures[0]: signature verification failed', what)
    t.strictSame(err.failures, [{ index: 0, reason: 'signature verification failed' }], what)
    t.equal(err.code, 'A2A_ERR_CARD_SIGNATURE')
  }

  const forged = { ...signed, signatures: [{ ...signed.signatures![0]!, protected: base64url.encode(JSON.stringify({ alg: 'ES256', kid: 'other', typ: 'JOSE' })) }] }
  t.strictSame((await failure(verifyAgentCard(forged, es256.publicKey))).failures, [{ index: 0, reason: 'signature verification failed' }],
    'the protected header is signed too')
})

t.test('the wrong key, or no key, fails', async t => {
  const signed = await signAgentCard(card, { key: es256.privateKey, kid: 'es-1', alg: 'ES256' })
  const other = await generateKeyPair('ES256')
  t.strictSame((await failure(verifyAgentCard(signed, other.publicKey))).failures, [{ index: 0, reason: 'signature verification failed' }])
  t.strictSame((await failure(verifyAgentCard(signed, ed25519.publicKey))).failures,
    [{ index: 0, reason: 'CryptoKey does not support this operation, its algorithm.name must be ECDSA' }], 'a key of another type')
  const refusing = async (): Promise<CryptoKey> => { throw 'key es-1 is revoked' }
  t.strictSame((await failure(verifyAgentCard(signed, refusing))).failures, [{ index: 0, reason: 'key es-1 is revoked' }],
    'a resolver that refuses, even with a non-Error')
})

t.test('several signatures (key rotation) verify independently', async t => {
  const once = await signAgentCard(card, { key: es256.privateKey, kid: 'old', alg: 'ES256' })
  const twice = await signAgentCard(once, { key: ed25519.privateKey, kid: 'new', alg: 'EdDSA' })
  t.equal(twice.signatures?.length, 2)
  t.strictSame(twice.signatures?.[0], once.signatures?.[0], 'the existing signature is kept as it was')
  t.strictSame(decodeHeader(twice.signatures![1]!), { alg: 'EdDSA', kid: 'new', typ: 'JOSE' })

  t.strictSame((await verifyAgentCard(twice, es256.publicKey)).map(v => v.index), [0], 'the old key: only its signature')
  t.strictSame((await verifyAgentCard(twice, ed25519.publicKey)).map(v => v.index), [1], 'the new key: only its signature')

  const jwks = createLocalJWKSet({ keys: [{ ...await exportJWK(es256.publicKey), kid: 'old' }, { ...await exportJWK(ed25519.publicKey), kid: 'new' }] })
  t.strictSame(await verifyAgentCard(twice, jwks), [
    { index: 0, protectedHeader: { alg: 'ES256', kid: 'old', typ: 'JOSE' } },
    { index: 1, protectedHeader: { alg: 'EdDSA', kid: 'new', typ: 'JOSE' } }
  ], 'a JWKS with both keys: both')

  const retired = createLocalJWKSet({ keys: [{ ...await exportJWK(ed25519.publicKey), kid: 'new' }] })
  t.strictSame((await verifyAgentCard(twice, retired)).map(v => v.index), [1], 'the old key retired from the JWKS: only the new signature')

  const err = await failure(verifyAgentCard(twice, createLocalJWKSet({ keys: [{ ...await exportJWK(es256.publicKey), kid: 'unrelated' }] })))
  t.strictSame(err.failures, [
    { index: 0, reason: 'no applicable key found in the JSON Web Key Set' },
    { index: 1, reason: 'no applicable key found in the JSON Web Key Set' }
  ])
  t.equal(err.message, 'No agent card signature verifies: signatures[0]: no applicable key found in the JSON Web Key Set; ' +
    'signatures[1]: no applicable key found in the JSON Web Key Set')

  const oneBroken = { ...twice, signatures: [{ ...twice.signatures![0]!, signature: twice.signatures![1]!.signature }, twice.signatures![1]!] }
  t.strictSame((await verifyAgentCard(oneBroken, jwks)).map(v => v.index), [1], 'a broken signature does not hide a good one')
})

t.test('jku goes in the protected header and reaches the key resolver', async t => {
  const jku = 'https://agent.example.com/.well-known/jwks.json'
  const signed = await signAgentCard(card, { key: ed25519.privateKey, kid: 'ed-1', alg: 'EdDSA', jku })
  const expected = { alg: 'EdDSA', kid: 'ed-1', typ: 'JOSE', jku }
  t.strictSame(decodeHeader(signed.signatures![0]!), expected)
  const seen: JWSHeaderParameters[] = []
  const resolver = async (header: JWSHeaderParameters): Promise<CryptoKey> => {
    seen.push(header)
    return ed25519.publicKey
  }
  t.strictSame(await verifyAgentCard(signed, resolver), [{ index: 0, protectedHeader: expected }])
  t.strictSame(seen, [expected])
})

t.test('an unprotected header is allowed and not signed', async t => {
  const signed = await signAgentCard(card, { key: es256.privateKey, kid: 'es-1', alg: 'ES256' })
  const withHeader = { ...signed, signatures: [{ ...signed.signatures![0]!, header: { note: 'added after signing' } }] }
  t.equal((await verifyAgentCard(withHeader, es256.publicKey)).length, 1)
})

t.test('signatures that break §8.4 or the allowed algorithms fail', async t => {
  const payload = new TextEncoder().encode(canonicalize(card))
  const noKid = await new FlattenedSign(payload).setProtectedHeader({ alg: 'ES256', typ: 'JOSE' }).setUnprotectedHeader({ kid: 'es-1' }).sign(es256.privateKey)
  const algOutside = await new FlattenedSign(payload).setProtectedHeader({ kid: 'es-1' }).setUnprotectedHeader({ alg: 'ES256' }).sign(es256.privateKey)
  const secret = await generateSecret('HS256')
  const hmac = await new FlattenedSign(payload).setProtectedHeader({ alg: 'HS256', kid: 'h', typ: 'JOSE' }).sign(secret)
  const signatures = [noKid, algOutside, hmac].map(({ protected: p, signature, header }) => header === undefined
    ? { protected: p as string, signature }
    : { protected: p as string, signature, header })
  const err = await failure(verifyAgentCard({ ...card, signatures }, async header => header.alg === 'HS256' ? secret : es256.publicKey))
  t.strictSame(err.failures, [
    { index: 0, reason: 'protected header has no kid' },
    { index: 1, reason: 'protected header has no alg' },
    { index: 2, reason: '"alg" (Algorithm) Header Parameter value not allowed' }
  ])
  const junk = [null, 'a.b.c', { signature: 'AA' }, { protected: '!!', signature: 'AA' }] as unknown as AgentCard['signatures']
  t.strictSame((await failure(verifyAgentCard({ ...card, signatures: junk }, es256.publicKey))).failures, [
    { index: 0, reason: 'not a JWS object' },
    { index: 1, reason: 'not a JWS object' },
    { index: 2, reason: 'no protected header' },
    { index: 3, reason: 'Invalid Token or Protected Header formatting' }
  ])
})

t.test('the presence rules of §8.4: a plain field holding its default is not signed', async t => {
  // Every kind of default a plain field can hold, beside REQUIRED fields that are empty and
  // `optional` fields set to their default, which stay.
  const served = {
    ...card,
    description: '',
    supportedInterfaces: [{ url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    capabilities: { streaming: false, extensions: [{ uri: 'https://ext.example.com/x', description: '', required: false, params: {} }] },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: '', bearerFormat: '' } },
      oauth: { oauth2SecurityScheme: { flows: { authorizationCode: { authorizationUrl: 'https://a', tokenUrl: 'https://t', refreshUrl: '', scopes: {}, pkceRequired: false } } } }
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }, { schemes: {} }],
    skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['echo'], examples: [], inputModes: [], outputModes: ['text/plain'], securityRequirements: [] }]
  }
  // The same card as a proto-based signer rebuilds it, written out by hand.
  const rebuilt = {
    ...card,
    description: '',
    supportedInterfaces: [{ url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: false, extensions: [{ uri: 'https://ext.example.com/x', params: {} }] },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } },
      oauth: { oauth2SecurityScheme: { flows: { authorizationCode: { authorizationUrl: 'https://a', tokenUrl: 'https://t', scopes: {} } } } }
    },
    securityRequirements: [{ schemes: { bearer: {} } }, {}],
    skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['echo'], outputModes: ['text/plain'] }]
  }
  const signed = await signAgentCard(served, { key: es256.privateKey, kid: 'es-1', alg: 'ES256' })
  const [signature] = signed.signatures ?? []
  const input = Buffer.from(`${signature?.protected}.${base64url.encode(canonicalize(rebuilt))}`)
  const publicKey = createPublicKey({ key: await exportJWK(es256.publicKey) as any, format: 'jwk' })
  t.ok(cryptoVerify('sha256', input, { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(base64url.decode(signature!.signature))),
    'the signature covers the card with the defaults of plain fields left out')
  t.strictSame(signed.securityRequirements, served.securityRequirements, 'the card itself keeps them')

  // A card signed by a proto-based signer, served with its defaults written out, verifies.
  const external = await new FlattenedSign(new TextEncoder().encode(canonicalize(rebuilt))).setProtectedHeader({ alg: 'ES256', kid: 'ext', typ: 'JOSE' }).sign(es256.privateKey)
  const fromElsewhere = { ...served, signatures: [{ protected: external.protected as string, signature: external.signature }] }
  t.equal((await verifyAgentCard(fromElsewhere, es256.publicKey)).length, 1)
  // An `optional` field set to its default, a REQUIRED one left empty: what the card says.
  for (const changed of [{ capabilities: { extensions: served.capabilities.extensions } }, { description: undefined }]) {
    await failure(verifyAgentCard({ ...signed, ...changed }, es256.publicKey))
  }
  t.equal((await verifyAgentCard({ ...signed, securityRequirements: [{ schemes: { bearer: {} } }, {}] } as typeof signed, es256.publicKey)).length, 1,
    'a default written out or left out verifies the same')
})

t.test('a card without signatures does not verify', async t => {
  for (const signatures of [undefined, []]) {
    const err = await failure(verifyAgentCard({ ...card, signatures }, es256.publicKey))
    t.equal(err.message, 'Agent card has no signatures')
    t.strictSame(err.failures, [])
  }
})

t.test('signing options are checked', async t => {
  const key = es256.privateKey
  await t.rejects(signAgentCard(card, { key, kid: 'k', alg: 'RS256' as 'ES256' }), { name: 'TypeError', message: 'signAgentCard: alg must be one of ES256, EdDSA, Ed25519' })
  await t.rejects(signAgentCard(card, { key, kid: '', alg: 'ES256' }), { name: 'TypeError', message: 'signAgentCard: kid must be a non-empty string' })
  for (const jku of ['http://agent.example.com/jwks.json', 'not a url']) {
    await t.rejects(signAgentCard(card, { key, kid: 'k', alg: 'ES256', jku }), { name: 'TypeError', message: 'signAgentCard: jku must be an https URL' }, jku)
  }
  await t.rejects(signAgentCard(card, { key: ed25519.privateKey, kid: 'k', alg: 'ES256' }), { message: 'CryptoKey does not support this operation, its algorithm.name must be ECDSA' },
    'a key that does not match alg')
})

t.test('the plugin checks signing at registration: jku an https URL, a key that fits alg, a publicUrl', async t => {
  const register = async (signing: CardSigningOptions, publicUrl?: string) => {
    const fastify = Fastify()
    t.teardown(() => fastify.close())
    await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, publicUrl, signing })
    await fastify.ready()
  }
  const publicUrl = 'https://agent.example.com'
  for (const jku of ['http://agent.example.com/jwks.json', 'not a url']) {
    await t.rejects(register({ key: es256.privateKey, kid: 'k', alg: 'ES256', jku }, publicUrl),
      { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option signing.jku: must be an https URL' }, jku)
  }
  // Else every card GET would answer 500.
  await t.rejects(register({ key: ed25519.privateKey, kid: 'k', alg: 'ES256' }, publicUrl), {
    code: 'A2A_ERR_INVALID_OPTION',
    message: 'Invalid option signing.key: cannot sign with ES256: CryptoKey does not support this operation, its algorithm.name must be ECDSA'
  }, 'an Ed25519 key for ES256')
  // Else anyone could have a signed card naming their own host, by the Host header of their request.
  await t.rejects(register({ key: ed25519.privateKey, kid: 'k', alg: 'EdDSA' }), {
    code: 'A2A_ERR_INVALID_OPTION',
    message: 'Invalid option signing: needs publicUrl: a signed card must not take its URLs from the request'
  }, 'no publicUrl')
  await register({ key: ed25519.privateKey, kid: 'k', alg: 'EdDSA', jku: 'https://agent.example.com/jwks.json' }, publicUrl)
})

t.test('the signed card names publicUrl whatever the request\'s Host and X-Forwarded-* headers (trustProxy)', async t => {
  const fastify = Fastify({ trustProxy: true })
  t.teardown(() => fastify.close())
  await fastify.register(a2aWebSocket, {
    executor: conformanceAgent, card: conformanceCard, prefix: '/a2a', publicUrl: 'https://agent.example.com', signing: { key: es256.privateKey, kid: 'k', alg: 'ES256' }
  })
  const hostile = [
    { host: 'evil.attacker.example' },
    { host: 'evil.attacker.example', 'x-forwarded-host': 'evil.attacker.example', 'x-forwarded-proto': 'http' }
  ]
  for (const headers of hostile) {
    const card = (await fastify.inject({ url: '/.well-known/agent-card.json', headers })).json()
    t.strictSame(card.supportedInterfaces.map((i: { url: string, protocolBinding: string }) => [i.url, i.protocolBinding]), [
      ['https://agent.example.com/a2a', 'JSONRPC'],
      ['https://agent.example.com/a2a', 'HTTP+JSON'],
      ['wss://agent.example.com/a2a', 'https://a2a-rust.com/bindings/websocket/v1'],
      ['wss://agent.example.com/a2a', 'WEBSOCKET']
    ], JSON.stringify(headers))
    t.strictSame(await verifyAgentCard(card, es256.publicKey), [{ index: 0, protectedHeader: { alg: 'ES256', kid: 'k', typ: 'JOSE' } }])
  }
})
