// Built-in authentication: bearer tokens, API keys and JWT (OIDC) access tokens, checked
// on every call of every binding (every WebSocket frame included). The card's
// securitySchemes and securityRequirements are generated from the same configuration.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { PermissionDeniedError, UnauthenticatedError } from '../errors/index.js';
const sha256 = (value) => createHash('sha256').update(value).digest();
/** A constant-time membership test: no secret leaks through how fast a guess fails. */
function matcher(secrets) {
    if (secrets === undefined)
        return undefined;
    const digests = secrets.map(sha256);
    return (candidate) => {
        const digest = sha256(candidate);
        let found = false;
        for (const secret of digests)
            found = timingSafeEqual(secret, digest) || found;
        return found;
    };
}
function scopesOf(claims) {
    if (typeof claims.scope === 'string')
        return claims.scope.split(' ').filter(Boolean);
    if (Array.isArray(claims.scp))
        return claims.scp.filter((scope) => typeof scope === 'string');
    return [];
}
export function authentication(options) {
    const realm = options.realm ?? 'a2a';
    const challenge = `Bearer realm="${realm}"`;
    const bearerTokens = matcher(options.bearer?.tokens);
    const apiKeys = matcher(options.apiKey?.keys);
    const apiKeyName = options.apiKey?.name.toLowerCase();
    const jwt = options.jwt;
    const jwks = jwt?.jwksUrl !== undefined ? createRemoteJWKSet(new URL(jwt.jwksUrl)) : jwt?.key;
    const usesBearer = options.bearer !== undefined || jwt !== undefined;
    const missing = usesBearer ? challenge : `ApiKey realm="${realm}", ${options.apiKey?.in ?? 'header'}="${options.apiKey?.name}"`;
    const unauthenticated = (error) => new UnauthenticatedError().with({ metadata: { 'www-authenticate': error === undefined ? missing : `${challenge}, error="${error}"` } });
    async function fromBearer(token, context) {
        if (jwt !== undefined && jwks !== undefined && token.split('.').length === 3) {
            let claims;
            try {
                const verified = await jwtVerify(token, jwks, {
                    issuer: jwt.issuer, audience: jwt.audience, clockTolerance: jwt.clockTolerance
                });
                claims = verified.payload;
            }
            catch {
                throw unauthenticated('invalid_token');
            }
            const scopes = scopesOf(claims);
            const lacking = (jwt.requiredScopes ?? []).filter(scope => !scopes.includes(scope));
            if (lacking.length > 0) {
                throw new PermissionDeniedError().with({
                    metadata: { 'www-authenticate': `${challenge}, error="insufficient_scope", scope="${(jwt.requiredScopes ?? []).join(' ')}"` }
                });
            }
            return { subject: claims.sub ?? '', scheme: 'jwt', scopes, claims };
        }
        if (bearerTokens?.(token) === true)
            return { subject: `bearer:${sha256(token).toString('hex').slice(0, 12)}`, scheme: 'bearer', scopes: [] };
        const verified = await options.bearer?.verify?.(token, context);
        return verified === undefined ? undefined : { subject: '', scopes: [], ...verified, scheme: 'bearer' };
    }
    async function fromApiKey(key, context) {
        if (apiKeys?.(key) === true)
            return { subject: `apiKey:${sha256(key).toString('hex').slice(0, 12)}`, scheme: 'apiKey', scopes: [] };
        const verified = await options.apiKey?.verify?.(key, context);
        return verified === undefined ? undefined : { subject: '', scopes: [], ...verified, scheme: 'apiKey' };
    }
    function apiKeyOf(serviceParams, request) {
        if (options.apiKey === undefined || apiKeyName === undefined)
            return undefined;
        if (options.apiKey.in === 'query') {
            const value = request?.query?.[options.apiKey.name];
            return typeof value === 'string' && value !== '' ? value : undefined;
        }
        return serviceParams[apiKeyName];
    }
    /** The caller's identity from the credentials present; throws the refusal when none is valid. */
    async function authenticate(serviceParams, context, request) {
        const authorization = serviceParams.authorization;
        const bearer = usesBearer && authorization !== undefined && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : undefined;
        const key = apiKeyOf(serviceParams, request);
        if (bearer === undefined && key === undefined)
            throw unauthenticated();
        const identity = (bearer === undefined ? undefined : await fromBearer(bearer, context)) ??
            (key === undefined ? undefined : await fromApiKey(key, context));
        if (identity === undefined)
            throw unauthenticated('invalid_token');
        return identity;
    }
    const securitySchemes = {};
    const securityRequirements = [];
    if (options.bearer !== undefined) {
        securitySchemes.bearer = { httpAuthSecurityScheme: { scheme: 'Bearer' } };
        securityRequirements.push({ schemes: { bearer: { list: [] } } });
    }
    if (jwt !== undefined) {
        securitySchemes.jwt = jwt.openIdConnectUrl !== undefined
            ? { openIdConnectSecurityScheme: { openIdConnectUrl: jwt.openIdConnectUrl } }
            : { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } };
        securityRequirements.push({ schemes: { jwt: { list: jwt.requiredScopes ?? [] } } });
    }
    if (options.apiKey !== undefined) {
        securitySchemes.apiKey = { apiKeySecurityScheme: { location: options.apiKey.in ?? 'header', name: options.apiKey.name } };
        securityRequirements.push({ schemes: { apiKey: { list: [] } } });
    }
    const upgrade = (request, serviceParams) => authenticate(serviceParams, { binding: '', method: '', serviceParams: serviceParams, tenant: '', extensions: [] }, request);
    const interceptor = {
        async before(context, call) {
            const identity = await authenticate(context.serviceParams, context, call.request);
            context.identity = identity;
            context.scopes = identity.scopes;
        },
        onUpgrade: options.refuseAtUpgrade === true
            ? async (request, serviceParams) => { await upgrade(request, serviceParams); }
            : undefined
    };
    return { interceptor, upgrade, securitySchemes, securityRequirements };
}
//# sourceMappingURL=auth.js.map