// Plugin options: normalised and checked once, at registration. A bad option fails
// `register` with an error naming it.
import createError from '@fastify/error';
import { DEFAULT_EXECUTOR_TIMEOUT } from './handler/request-handler.js';
import { DEFAULT_MAX_JSON_DEPTH } from './json-guard.js';
import { PUSH_DEFAULTS } from './push/sender.js';
import { WebhookGuard } from './push/ssrf.js';
import { compile } from './schema/validate.js';
import { AgentCardInput } from './schema/wire.js';
export const InvalidOptionError = createError('A2A_ERR_INVALID_OPTION', 'Invalid option %s: %s', 500, TypeError);
export const validateCard = compile(AgentCardInput);
function checkCard(name, card) {
    const checked = validateCard.check(card);
    if (!checked.ok) {
        const [first] = checked.violations;
        throw new InvalidOptionError(first?.field === '' ? name : `${name}.${first?.field}`, first?.description);
    }
    return checked.value;
}
function integer(name, value, fallback, min = 1) {
    if (value === undefined)
        return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
        throw new InvalidOptionError(name, `must be an integer >= ${min}`);
    return value;
}
function hasMethods(value, names) {
    return typeof value === 'object' && value !== null && names.every(name => typeof value[name] === 'function');
}
function webSocketOptions(options) {
    const { allowedOrigins } = options;
    if (allowedOrigins !== undefined && (!Array.isArray(allowedOrigins) || !allowedOrigins.every(origin => typeof origin === 'string'))) {
        throw new InvalidOptionError('websocket.allowedOrigins', 'must be an array of origins');
    }
    if (options.requireOrigin !== undefined && typeof options.requireOrigin !== 'boolean')
        throw new InvalidOptionError('websocket.requireOrigin', 'must be a boolean');
    return {
        allowedOrigins,
        requireOrigin: options.requireOrigin ?? false,
        maxMessageSize: integer('websocket.maxMessageSize', options.maxMessageSize, 4 * 1024 * 1024),
        maxInFlight: integer('websocket.maxInFlight', options.maxInFlight, 64),
        maxBufferedBytes: integer('websocket.maxBufferedBytes', options.maxBufferedBytes, 8 * 1024 * 1024),
        handshakeTimeout: integer('websocket.handshakeTimeout', options.handshakeTimeout, 10_000, 0),
        maxConnections: options.maxConnections === undefined ? undefined : integer('websocket.maxConnections', options.maxConnections, 0),
        idleTimeout: integer('websocket.idleTimeout', options.idleTimeout, 0, 0),
        a2aV1: a2aV1Options(options.a2aV1 ?? {})
    };
}
function a2aV1Options(options) {
    if (typeof options !== 'object' || options === null)
        throw new InvalidOptionError('websocket.a2aV1', 'must be an object');
    if (!flag('websocket.a2aV1.enabled', options.enabled, true))
        return undefined;
    const { rateLimit } = options;
    if (rateLimit !== undefined && rateLimit !== false && (typeof rateLimit !== 'object' || rateLimit === null)) {
        throw new InvalidOptionError('websocket.a2aV1.rateLimit', 'must be false or { max?, timeWindow?, store? }');
    }
    if (rateLimit !== undefined && rateLimit !== false && rateLimit.store !== undefined && !hasMethods(rateLimit.store, ['incr'])) {
        throw new InvalidOptionError('websocket.a2aV1.rateLimit.store', 'must implement incr(key, callback, timeWindow, max)');
    }
    return {
        refuseAtUpgrade: flag('websocket.a2aV1.refuseAtUpgrade', options.refuseAtUpgrade, true),
        maxMessageSize: integer('websocket.a2aV1.maxMessageSize', options.maxMessageSize, 1024 * 1024),
        maxInFlight: integer('websocket.a2aV1.maxStreams', options.maxStreams, 128),
        maxConnectionsPerIdentity: integer('websocket.a2aV1.maxConnectionsPerIdentity', options.maxConnectionsPerIdentity, 256),
        pingInterval: timerMs('websocket.a2aV1.pingInterval', options.pingInterval, 30_000, 0),
        pongTimeout: timerMs('websocket.a2aV1.pongTimeout', options.pongTimeout, 10_000, 1),
        idleTimeout: timerMs('websocket.a2aV1.idleTimeout', options.idleTimeout, 300_000, 0),
        messageRate: rateLimit === false
            ? undefined
            : {
                max: integer('websocket.a2aV1.rateLimit.max', rateLimit?.max, 100),
                timeWindow: timerMs('websocket.a2aV1.rateLimit.timeWindow', rateLimit?.timeWindow, 1000, 1),
                store: rateLimit?.store
            }
    };
}
/** setTimeout's largest delay: a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
function timerMs(name, value, fallback, min) {
    const ms = integer(name, value, fallback, min);
    if (ms > MAX_TIMER_MS)
        throw new InvalidOptionError(name, `must be at most ${MAX_TIMER_MS} ms`);
    return ms;
}
function shutdownOptions(options, closeGrace) {
    const alias = closeGrace === undefined ? undefined : timerMs('websocket.closeGrace', closeGrace, 0, 0);
    const completionGrace = timerMs('shutdown.completionGrace', options.completionGrace, alias ?? 5000, 0);
    if (alias !== undefined && alias !== completionGrace)
        throw new InvalidOptionError('websocket.closeGrace', 'conflicts with shutdown.completionGrace');
    return { completionGrace, taskGrace: timerMs('shutdown.taskGrace', options.taskGrace, 2000, 0) };
}
function flag(name, value, fallback) {
    if (value === undefined)
        return fallback;
    if (typeof value !== 'boolean')
        throw new InvalidOptionError(name, 'must be a boolean');
    return value;
}
function pushOptions(options, declared) {
    if (!declared) {
        if (options !== undefined)
            throw new InvalidOptionError('push', 'needs card.capabilities.pushNotifications to be true');
        return undefined;
    }
    const { allow = PUSH_DEFAULTS.allow, onDelivery, resolve } = options ?? {};
    if (!Array.isArray(allow))
        throw new InvalidOptionError('push.allow', 'must be an array of host names, IP addresses or CIDR ranges');
    for (const entry of allow) {
        const problem = WebhookGuard.checkEntry(entry);
        if (problem !== undefined)
            throw new InvalidOptionError('push.allow', problem);
    }
    if (onDelivery !== undefined && typeof onDelivery !== 'function')
        throw new InvalidOptionError('push.onDelivery', 'must be a function');
    if (resolve !== undefined && typeof resolve !== 'function')
        throw new InvalidOptionError('push.resolve', 'must be a function');
    return {
        allow,
        timeout: integer('push.timeout', options?.timeout, PUSH_DEFAULTS.timeout),
        maxAttempts: integer('push.maxAttempts', options?.maxAttempts, PUSH_DEFAULTS.maxAttempts),
        retryDelay: integer('push.retryDelay', options?.retryDelay, PUSH_DEFAULTS.retryDelay, 0),
        maxRetryDelay: integer('push.maxRetryDelay', options?.maxRetryDelay, PUSH_DEFAULTS.maxRetryDelay, 0),
        maxQueued: integer('push.maxQueued', options?.maxQueued, PUSH_DEFAULTS.maxQueued),
        onDelivery,
        resolve
    };
}
function stringList(name, value) {
    if (value !== undefined && (!Array.isArray(value) || value.length === 0 || !value.every(item => typeof item === 'string' && item !== ''))) {
        throw new InvalidOptionError(name, 'must be a non-empty array of non-empty strings');
    }
}
function checkAuth(auth) {
    if (auth === undefined)
        return undefined;
    if (auth.bearer === undefined && auth.apiKey === undefined && auth.jwt === undefined) {
        throw new InvalidOptionError('auth', 'must configure bearer, apiKey or jwt');
    }
    if (auth.bearer !== undefined) {
        stringList('auth.bearer.tokens', auth.bearer.tokens);
        if (auth.bearer.tokens === undefined && typeof auth.bearer.verify !== 'function')
            throw new InvalidOptionError('auth.bearer', 'needs tokens or a verify function');
    }
    if (auth.apiKey !== undefined) {
        if (typeof auth.apiKey.name !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(auth.apiKey.name))
            throw new InvalidOptionError('auth.apiKey.name', 'must be a header or query parameter name');
        if (auth.apiKey.in !== undefined && auth.apiKey.in !== 'header' && auth.apiKey.in !== 'query')
            throw new InvalidOptionError('auth.apiKey.in', 'must be "header" or "query"');
        stringList('auth.apiKey.keys', auth.apiKey.keys);
        if (auth.apiKey.keys === undefined && typeof auth.apiKey.verify !== 'function')
            throw new InvalidOptionError('auth.apiKey', 'needs keys or a verify function');
    }
    if (auth.jwt !== undefined) {
        if ((auth.jwt.jwksUrl === undefined) === (auth.jwt.key === undefined))
            throw new InvalidOptionError('auth.jwt', 'needs exactly one of jwksUrl and key');
        if (auth.jwt.jwksUrl !== undefined && !URL.canParse(auth.jwt.jwksUrl))
            throw new InvalidOptionError('auth.jwt.jwksUrl', 'must be an absolute URL');
        if (auth.jwt.requiredScopes !== undefined)
            stringList('auth.jwt.requiredScopes', auth.jwt.requiredScopes);
    }
    return auth;
}
function checkRateLimit(limit) {
    if (limit === undefined)
        return undefined;
    integer('rateLimit.max', limit.max ?? 0, 0);
    integer('rateLimit.timeWindow', limit.timeWindow, 60_000);
    if (limit.store !== undefined && !hasMethods(limit.store, ['incr']))
        throw new InvalidOptionError('rateLimit.store', 'must implement incr(key, callback, timeWindow, max)');
    return limit;
}
function checkSigning(signing) {
    if (signing === undefined)
        return undefined;
    if (!['ES256', 'EdDSA', 'Ed25519'].includes(signing.alg))
        throw new InvalidOptionError('signing.alg', 'must be ES256, EdDSA or Ed25519');
    if (typeof signing.kid !== 'string' || signing.kid === '')
        throw new InvalidOptionError('signing.kid', 'must be a non-empty key id');
    if (signing.key === undefined || signing.key === null)
        throw new InvalidOptionError('signing.key', 'is required');
    return signing;
}
function checkTenancy(options) {
    if (options === undefined)
        return undefined;
    if (options.header !== undefined && (typeof options.header !== 'string' || options.header === ''))
        throw new InvalidOptionError('tenancy.header', 'must be a header name');
    if (options.resolve !== undefined && typeof options.resolve !== 'function')
        throw new InvalidOptionError('tenancy.resolve', 'must be a function');
    return options;
}
export function interceptorList(value) {
    if (value === undefined)
        return [];
    const hooks = ['before', 'onComplete', 'onUpgrade'];
    const valid = (item) => typeof item === 'object' && item !== null &&
        hooks.every(hook => item[hook] === undefined || typeof item[hook] === 'function');
    if (!Array.isArray(value) || !value.every(valid)) {
        throw new InvalidOptionError('interceptors', 'must be an array of { before?, onComplete?, onUpgrade? } objects');
    }
    return [...value];
}
export function normalizeOptions(options) {
    if (!hasMethods(options.executor, ['execute']))
        throw new InvalidOptionError('executor', 'must be an object with an execute(context, events) method');
    const card = checkCard('card', options.card);
    let publicUrl;
    if (options.publicUrl !== undefined) {
        let url;
        try {
            url = new URL(options.publicUrl);
        }
        catch { }
        if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
            throw new InvalidOptionError('publicUrl', 'must be an absolute http or https URL');
        }
        publicUrl = url.origin + url.pathname.replace(/\/+$/, '');
    }
    const prefix = options.prefix ?? '';
    if (typeof prefix !== 'string' || (prefix !== '' && !prefix.startsWith('/')))
        throw new InvalidOptionError('prefix', 'must be a path starting with /');
    let extendedCard;
    if (typeof options.extendedCard === 'function')
        extendedCard = options.extendedCard;
    else if (options.extendedCard !== undefined) {
        const fixed = checkCard('extendedCard', options.extendedCard);
        extendedCard = () => fixed;
    }
    if (options.taskStore !== undefined && !hasMethods(options.taskStore, ['create', 'get', 'update', 'list'])) {
        throw new InvalidOptionError('taskStore', 'must implement create, get, update and list');
    }
    if (options.pushConfigStore !== undefined && !hasMethods(options.pushConfigStore, ['set', 'get', 'list', 'delete'])) {
        throw new InvalidOptionError('pushConfigStore', 'must implement set, get, list and delete');
    }
    if (options.bus !== undefined && !hasMethods(options.bus, ['publish', 'subscribe', 'listenerCount'])) {
        throw new InvalidOptionError('bus', 'must implement publish, subscribe and listenerCount');
    }
    for (const name of ['allowMissingVersion', 'allowUndeclaredInputModes']) {
        if (options[name] !== undefined && typeof options[name] !== 'boolean')
            throw new InvalidOptionError(name, 'must be a boolean');
    }
    return {
        executor: options.executor,
        card,
        publicUrl,
        prefix: prefix.replace(/\/+$/, ''),
        extendedCard,
        taskStore: options.taskStore,
        pushConfigStore: options.pushConfigStore,
        bus: options.bus,
        bodyLimit: integer('bodyLimit', options.bodyLimit, 4 * 1024 * 1024),
        allowMissingVersion: options.allowMissingVersion ?? false,
        maxQueuedEvents: integer('maxQueuedEvents', options.maxQueuedEvents, 1024),
        maxJsonDepth: integer('maxJsonDepth', options.maxJsonDepth, DEFAULT_MAX_JSON_DEPTH),
        executorTimeout: timerMs('executorTimeout', options.executorTimeout, DEFAULT_EXECUTOR_TIMEOUT, 1),
        shutdown: shutdownOptions(options.shutdown ?? {}, options.websocket?.closeGrace),
        cardMaxAge: integer('cardMaxAge', options.cardMaxAge, 300, 0),
        allowUndeclaredInputModes: options.allowUndeclaredInputModes ?? false,
        interceptors: interceptorList(options.interceptors),
        websocket: webSocketOptions(options.websocket ?? {}),
        push: pushOptions(options.push, card.capabilities.pushNotifications === true),
        recoverTasks: flag('recoverTasks', options.recoverTasks, true),
        auth: checkAuth(options.auth),
        rateLimit: checkRateLimit(options.rateLimit),
        tenancy: checkTenancy(options.tenancy),
        cors: options.cors === undefined || options.cors === false ? undefined : options.cors === true ? {} : options.cors,
        signing: checkSigning(options.signing)
    };
}
//# sourceMappingURL=options.js.map