// Built-in authentication: bearer tokens, API keys and JWT (OIDC) access tokens, checked
// on every call of every binding (every WebSocket frame included). The card's
// securitySchemes and securityRequirements are generated from the same configuration.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type CryptoKey, type JWK, type KeyObject } from 'jose'
import { PermissionDeniedError, UnauthenticatedError, UnavailableError, retryInfo, type A2AError } from '../errors/index.js'
import type { CallContext } from '../handler/executor.js'
import type { SecurityRequirement, SecurityScheme } from '../schema/wire.js'
import type { ServiceParams } from '../service-params.js'
import type { A2AInterceptor, InterceptedCall } from './types.js'

/** Who the caller is, as the built-in authentication sets `context.identity`. */
export interface Identity {
  /** The token's subject, the API key's owner, or what a verify function returned. */
  subject: string
  scheme: 'bearer' | 'apiKey' | 'jwt'
  scopes: string[]
  /** The verified JWT claims. */
  claims?: JWTPayload
}

/** A verify function returns the caller's identity, or undefined to refuse the credential. */
export type Verify = (credential: string, context: CallContext) => Partial<Identity> | undefined | Promise<Partial<Identity> | undefined>

export interface AuthOptions {
  /** `Authorization: Bearer <token>`: a fixed set of tokens, or a verify function. */
  bearer?: { tokens?: string[], verify?: Verify }
  /** An API key in a header or the query string (the query works for browsers' WebSockets). */
  apiKey?: { name: string, in?: 'header' | 'query', keys?: string[], verify?: Verify }
  /** JWT access tokens in `Authorization: Bearer`, verified with a JWKS URL or a key; each needs `exp` and a non-empty `sub`. */
  jwt?: {
    /** https, or http to a loopback host. */
    jwksUrl?: string
    key?: CryptoKey | KeyObject | JWK | Uint8Array
    issuer?: string | string[]
    /** The `aud` this agent accepts: a token the issuer minted for another service is refused. */
    audience: string | string[]
    /** Seconds, or a jose duration string such as `"30s"`. Default 0. */
    clockTolerance?: number | string
    /** Scopes (the `scope` claim, space-separated, or `scp`) every call needs. */
    requiredScopes?: string[]
    /** Advertise the scheme as OpenID Connect with this discovery URL. */
    openIdConnectUrl?: string
  }
  /** The realm of the challenge: printable ASCII without `"` or `\`. Default `a2a`. */
  realm?: string
  /** Also refuse a WebSocket upgrade that carries no valid credential, with 401 before the 101. Default false. */
  refuseAtUpgrade?: boolean
}

const sha256 = (value: string) => createHash('sha256').update(value).digest()

/** A constant-time membership test: no secret leaks through how fast a guess fails. */
function matcher (secrets: string[] | undefined): ((candidate: string) => boolean) | undefined {
  if (secrets === undefined) return undefined
  const digests = secrets.map(sha256)
  return (candidate) => {
    const digest = sha256(candidate)
    let found = false
    for (const secret of digests) found = timingSafeEqual(secret, digest) || found
    return found
  }
}

function scopesOf (claims: JWTPayload): string[] {
  if (typeof claims.scope === 'string') return claims.scope.split(' ').filter(Boolean)
  if (Array.isArray(claims.scp)) return claims.scp.filter((scope): scope is string => typeof scope === 'string')
  return []
}

export interface Authentication {
  interceptor: A2AInterceptor
  /** The caller of a WebSocket upgrade, from its credentials; throws the refusal (401/403) when none is valid. */
  upgrade (request: FastifyRequest, serviceParams: Readonly<ServiceParams>): Promise<Identity>
  securitySchemes: Record<string, SecurityScheme>
  securityRequirements: SecurityRequirement[]
}

/**
 * jose's errors of a key set it could not read (no answer in time, not a 200, not a key set)
 * and what its fetch throws (a TypeError `fetch failed`): the provider's fault, not the
 * token's, so the caller is told to try again rather than that the token is invalid.
 */
const KEY_SET_ERRORS = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JOSE_GENERIC', 'ERR_JWKS_INVALID'])
const KEY_SET_RETRY_MS = 1000

function keySetUnreadable (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? KEY_SET_ERRORS.has(code) : true
}

export function authentication (options: AuthOptions): Authentication {
  const realm = options.realm ?? 'a2a'
  const challenge = `Bearer realm="${realm}"`
  const bearerTokens = matcher(options.bearer?.tokens)
  const apiKeys = matcher(options.apiKey?.keys)
  const apiKeyName = options.apiKey?.name.toLowerCase()
  const jwt = options.jwt
  const jwks: JWTVerifyGetKey | CryptoKey | KeyObject | JWK | Uint8Array | undefined =
    jwt?.jwksUrl !== undefined ? createRemoteJWKSet(new URL(jwt.jwksUrl)) : jwt?.key
  const usesBearer = options.bearer !== undefined || jwt !== undefined
  const apiKeyChallenge = `ApiKey realm="${realm}", ${options.apiKey?.in ?? 'header'}="${options.apiKey?.name}"`
  const missing = usesBearer ? challenge : apiKeyChallenge

  const challenged = (header: string): A2AError => new UnauthenticatedError().with({ metadata: { 'www-authenticate': header } })
  const unauthenticated = (error?: string): A2AError => challenged(error === undefined ? missing : `${challenge}, error="${error}"`)

  async function fromBearer (token: string, context: CallContext): Promise<Identity | undefined> {
    if (jwt !== undefined && jwks !== undefined && token.split('.').length === 3) {
      let claims: JWTPayload
      try {
        // A token without `exp` would be valid for ever.
        const verified = await jwtVerify(token, jwks as JWTVerifyGetKey, {
          issuer: jwt.issuer, audience: jwt.audience, clockTolerance: jwt.clockTolerance, requiredClaims: ['exp']
        })
        claims = verified.payload
      } catch (error) {
        if (jwt.jwksUrl !== undefined && keySetUnreadable(error)) {
          throw new UnavailableError('the identity provider\'s key set cannot be read').with({ cause: error, details: [retryInfo(KEY_SET_RETRY_MS)] })
        }
        throw unauthenticated('invalid_token')
      }
      // The subject is the identity (rate-limit budgets, tenancy.resolve): a token naming no one is refused.
      if (typeof claims.sub !== 'string' || claims.sub === '') throw unauthenticated('invalid_token')
      const scopes = scopesOf(claims)
      const lacking = (jwt.requiredScopes ?? []).filter(scope => !scopes.includes(scope))
      if (lacking.length > 0) {
        throw new PermissionDeniedError().with({
          metadata: { 'www-authenticate': `${challenge}, error="insufficient_scope", scope="${(jwt.requiredScopes ?? []).join(' ')}"` }
        })
      }
      return { subject: claims.sub, scheme: 'jwt', scopes, claims }
    }
    if (bearerTokens?.(token) === true) return { subject: `bearer:${sha256(token).toString('hex').slice(0, 12)}`, scheme: 'bearer', scopes: [] }
    const verified = await options.bearer?.verify?.(token, context)
    return verified === undefined ? undefined : { subject: '', scopes: [], ...verified, scheme: 'bearer' }
  }

  async function fromApiKey (key: string, context: CallContext): Promise<Identity | undefined> {
    if (apiKeys?.(key) === true) return { subject: `apiKey:${sha256(key).toString('hex').slice(0, 12)}`, scheme: 'apiKey', scopes: [] }
    const verified = await options.apiKey?.verify?.(key, context)
    return verified === undefined ? undefined : { subject: '', scopes: [], ...verified, scheme: 'apiKey' }
  }

  function apiKeyOf (serviceParams: Readonly<ServiceParams>, request: FastifyRequest | undefined): string | undefined {
    if (options.apiKey === undefined || apiKeyName === undefined) return undefined
    if (options.apiKey.in === 'query') {
      const value = (request?.query as Record<string, unknown> | undefined)?.[options.apiKey.name]
      return typeof value === 'string' && value !== '' ? value : undefined
    }
    return serviceParams[apiKeyName]
  }

  /** The caller's identity from the credentials present; throws the refusal when none is valid. */
  /** The caller's identity; a refusal is logged (spec §13: what was refused and why, never the credential) and thrown. */
  async function authenticate (serviceParams: Readonly<ServiceParams>, context: CallContext, request: FastifyRequest | undefined): Promise<Identity> {
    try {
      return await identify(serviceParams, context, request)
    } catch (error) {
      const { row, metadata } = error as Partial<A2AError>
      // Only a refusal (401, 403): a verifier or a key set out of reach is a failure, logged as one.
      if (row?.httpStatus === 401 || row?.httpStatus === 403) {
        const refusal = { binding: context.binding === '' ? 'upgrade' : context.binding, method: context.method, reason: row.reason ?? 'UNAUTHENTICATED', challenge: metadata?.['www-authenticate'] }
        request?.log.info({ a2aRefusal: refusal }, 'A2A call refused by auth')
      }
      throw error
    }
  }

  async function identify (serviceParams: Readonly<ServiceParams>, context: CallContext, request: FastifyRequest | undefined): Promise<Identity> {
    const authorization = serviceParams.authorization
    const bearer = usesBearer && authorization !== undefined && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : undefined
    const key = apiKeyOf(serviceParams, request)
    if (bearer === undefined && key === undefined) throw unauthenticated()
    const identity = (bearer === undefined ? undefined : await fromBearer(bearer, context)) ??
      (key === undefined ? undefined : await fromApiKey(key, context))
    if (identity === undefined) {
      // RFC 6750's error="invalid_token" belongs to a Bearer token; a refused API key is challenged for one.
      throw bearer === undefined ? challenged(apiKeyChallenge) : unauthenticated('invalid_token')
    }
    return identity
  }

  const securitySchemes: Record<string, SecurityScheme> = {}
  const securityRequirements: SecurityRequirement[] = []
  if (options.bearer !== undefined) {
    securitySchemes.bearer = { httpAuthSecurityScheme: { scheme: 'Bearer' } }
    securityRequirements.push({ schemes: { bearer: { list: [] } } })
  }
  if (jwt !== undefined) {
    securitySchemes.jwt = jwt.openIdConnectUrl !== undefined
      ? { openIdConnectSecurityScheme: { openIdConnectUrl: jwt.openIdConnectUrl } }
      : { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } }
    securityRequirements.push({ schemes: { jwt: { list: jwt.requiredScopes ?? [] } } })
  }
  if (options.apiKey !== undefined) {
    securitySchemes.apiKey = { apiKeySecurityScheme: { location: options.apiKey.in ?? 'header', name: options.apiKey.name } }
    securityRequirements.push({ schemes: { apiKey: { list: [] } } })
  }

  const upgrade = (request: FastifyRequest, serviceParams: Readonly<ServiceParams>) =>
    authenticate(serviceParams, { binding: '', method: '', serviceParams: serviceParams as ServiceParams, tenant: '', extensions: [] }, request)
  const interceptor: A2AInterceptor = {
    async before (context: CallContext, call: InterceptedCall) {
      const identity = await authenticate(context.serviceParams, context, call.request)
      context.identity = identity
      context.scopes = identity.scopes
    },
    onUpgrade: options.refuseAtUpgrade === true
      ? async (request, serviceParams) => { await upgrade(request, serviceParams) }
      : undefined
  }
  return { interceptor, upgrade, securitySchemes, securityRequirements }
}
