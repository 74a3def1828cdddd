// The WebSocket binding on @fastify/websocket (seed 000, and the a2a.v1 dialect of seed
// 001 for a client that offers that subprotocol): the upgrade route at the plugin's root
// path, the handshake checks (Origin, connections, A2A-Version, a2a.v1's credential and
// per-identity cap), the connection-scoped service parameters, and the thin adapter from
// a `ws` socket to the connection logic in websocket-connection.ts.
import { randomUUID } from 'node:crypto';
import { OriginNotAllowedError, UnavailableError, VersionNotSupportedError, errorHeaders, toA2AError, toRestError } from '../errors/index.js';
import { requestedExtensions, requestedVersion, serviceParamsFromHeaders } from '../service-params.js';
import { A2A_V1_SUBPROTOCOL } from './websocket-connection.js';
export { WEBSOCKET_BINDING_URI } from './websocket-connection.js';
/** This binding has no resumption, and the upgrade's headers reach every call (seed 000 §2). */
const DROPPED_HEADERS = new Set(['last-event-id']);
const SUPPORTED_VERSION = /^1\.0(\.\d+)?$/;
/** The subprotocol to select among those a client offers: a2a.v1 when it is served and offered; none means seed 000. */
export function selectProtocol(offered, a2aV1) {
    return a2aV1 && [...offered].includes(A2A_V1_SUBPROTOCOL) ? A2A_V1_SUBPROTOCOL : undefined;
}
function refuse(reply, error) {
    return reply.code(error.row.httpStatus).headers(errorHeaders(error)).type('application/a2a+json').send(JSON.stringify(toRestError(error)));
}
function adapt(socket) {
    return {
        get bufferedAmount() { return socket.bufferedAmount; },
        get isOpen() { return socket.readyState === socket.OPEN; },
        send: (frame) => socket.send(frame),
        close: (code, reason) => socket.close(code, reason),
        ping: () => socket.ping()
    };
}
export async function webSocketDispatcher(fastify, options) {
    const allowed = options.allowedOrigins === undefined ? undefined : new Set(options.allowedOrigins.map(origin => origin.toLowerCase()));
    const handshakes = new WeakMap();
    let reserved = 0;
    /** a2a.v1 connections held by each identity authenticated at the upgrade. */
    const perIdentity = new Map();
    /** The handshake checks run as a route hook, before the upgrade: a refusal is an HTTP status with the REST error body. */
    async function checkUpgrade(request, reply) {
        if (!request.ws)
            return;
        const origin = request.headers.origin;
        if (origin === undefined ? options.requireOrigin : (allowed !== undefined && !allowed.has(origin.toLowerCase()))) {
            await refuse(reply, new OriginNotAllowedError(origin ?? '(none)'));
            return;
        }
        if (options.maxConnections !== undefined && reserved >= options.maxConnections) {
            await refuse(reply, new UnavailableError(`${options.maxConnections} WebSocket connections are open`));
            return;
        }
        const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map(name => name.trim());
        const protocol = selectProtocol(offered, options.a2aV1 !== undefined);
        const serviceParams = serviceParamsFromHeaders(request.raw.rawHeaders, DROPPED_HEADERS);
        const version = requestedVersion(serviceParams, request.query);
        // a2a.v1 reads the version of each request, which may bring its own (seed 001).
        if (protocol === undefined && (version === undefined ? !options.allowMissingVersion : !SUPPORTED_VERSION.test(version))) {
            const requested = version ?? '0.3';
            await refuse(reply, new VersionNotSupportedError(version ?? '0.3 (no A2A-Version was sent)')
                .with({ metadata: { requestedVersion: requested, supportedVersions: '1.0' } }));
            return;
        }
        let identity;
        try {
            for (const interceptor of options.interceptors)
                await interceptor.onUpgrade?.(request, serviceParams);
            if (protocol !== undefined && options.a2aV1?.refuseAtUpgrade === true)
                identity = (await options.authenticate?.(request, serviceParams))?.subject;
        }
        catch (error) {
            await refuse(reply, toA2AError(error));
            return;
        }
        // An anonymous connection counts against no identity.
        if (identity === '')
            identity = undefined;
        const held = identity === undefined ? 0 : perIdentity.get(identity) ?? 0;
        if (identity !== undefined && options.a2aV1 !== undefined && held >= options.a2aV1.maxConnectionsPerIdentity) {
            await refuse(reply, new UnavailableError(`${options.a2aV1.maxConnectionsPerIdentity} WebSocket connections are open for this identity`));
            return;
        }
        // A browser can only send the version in the query string: it is a parameter all the same.
        if (version !== undefined)
            serviceParams['a2a-version'] = version;
        serviceParams[':path'] = request.url.split('?')[0];
        serviceParams[':connection-id'] = randomUUID();
        handshakes.set(request, { serviceParams: Object.freeze(serviceParams), version, extensions: requestedExtensions(serviceParams), request, protocol, identity });
        // The slots are held from the handshake until the TCP connection closes.
        reserved++;
        if (identity !== undefined)
            perIdentity.set(identity, held + 1);
        request.raw.socket.once('close', () => {
            reserved--;
            if (identity === undefined)
                return;
            const left = (perIdentity.get(identity) ?? 1) - 1;
            if (left === 0)
                perIdentity.delete(identity);
            else
                perIdentity.set(identity, left);
        });
    }
    fastify.get('/', { websocket: true, onRequest: checkUpgrade }, (socket, request) => {
        const info = handshakes.get(request);
        const connection = options.server.opened(adapt(socket), info);
        // Listeners are attached at once so no frame that arrives with the upgrade is lost.
        socket.on('message', (data, isBinary) => connection.message(data, isBinary));
        socket.on('pong', () => connection.alive());
        socket.on('close', () => connection.closed());
    });
}
/**
 * While the server shuts down @fastify/websocket no longer routes upgrades, and Node
 * leaves an upgrade without a listener hanging: answer each with 503 and the REST body.
 */
export function refuseUpgrades(server) {
    const body = JSON.stringify(toRestError(new UnavailableError('the server is shutting down')));
    server.on('upgrade', (_request, socket) => {
        socket.end(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/a2a+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
}
/**
 * Disconnects a peer that opens a connection and does not complete a request (or an
 * upgrade) within `timeoutMs`. It applies to every connection of the server until its
 * first request, since nothing tells an upgrade from a plain request before its headers.
 */
export function guardHandshakes(server, timeoutMs) {
    const pending = new WeakMap();
    // A TLS server's requests arrive on the TLS socket, which `secureConnection` gives.
    const event = 'setSecureContext' in server ? 'secureConnection' : 'connection';
    const onConnection = (socket) => {
        const timer = setTimeout(() => socket.destroy(), timeoutMs);
        timer.unref();
        pending.set(socket, timer);
        socket.once('close', () => clearTimeout(timer));
    };
    const settled = (socket) => {
        clearTimeout(pending.get(socket));
        pending.delete(socket);
    };
    const onRequest = (request) => settled(request.socket);
    const onUpgrade = (_request, socket) => settled(socket);
    server.on(event, onConnection);
    server.on('request', onRequest);
    server.prependListener('upgrade', onUpgrade);
    return () => {
        server.off(event, onConnection);
        server.off('request', onRequest);
        server.off('upgrade', onUpgrade);
    };
}
//# sourceMappingURL=websocket.js.map