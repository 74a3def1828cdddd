// JSON-RPC 2.0 envelopes, shared by the JSON-RPC HTTP binding and the WebSocket
// binding (which carries the same messages over one connection).
import { InvalidParamsError, InvalidRequestError, MethodNotFoundError, toJsonRpcError } from '../errors/index.js';
import { DEFAULT_MAX_JSON_DEPTH, parseJson } from '../json-guard.js';
import { methods } from './call.js';
const isValidId = (id) => id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
/** Parses one JSON-RPC message from its text: the one JSON.parse of the request, after the depth guard. */
export function parseEnvelope(text, maxDepth = DEFAULT_MAX_JSON_DEPTH) {
    const parsed = parseJson(text, maxDepth);
    if (!parsed.ok)
        return { ok: false, id: null, error: parsed.error, notification: false };
    return readEnvelope(parsed.value);
}
/** Checks the envelope (spec §9, JSON-RPC 2.0 §4) and looks the method up. */
export function readEnvelope(value) {
    const invalid = (id, reason) => ({ ok: false, id, error: new InvalidRequestError(reason), notification: false });
    if (Array.isArray(value))
        return invalid(null, 'batch requests are not supported');
    if (value === null || typeof value !== 'object')
        return invalid(null, 'a request must be a JSON object');
    const message = value;
    const hasId = Object.hasOwn(message, 'id');
    if (hasId && !isValidId(message.id))
        return invalid(null, 'id must be a string, a number or null');
    const id = hasId ? message.id : null;
    if (message.jsonrpc !== '2.0')
        return invalid(id, 'jsonrpc must be "2.0"');
    if (typeof message.method !== 'string')
        return invalid(id, 'method must be a string');
    const spec = methods.get(message.method);
    if (spec === undefined)
        return { ok: false, id, error: new MethodNotFoundError(message.method), notification: !hasId };
    const params = message.params;
    if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
        return { ok: false, id, error: new InvalidParamsError('params must be an object'), notification: !hasId };
    }
    const request = { method: spec, params };
    if (hasId)
        request.id = id;
    return { ok: true, request };
}
export function success(id, result) {
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result)}}`;
}
export function failure(id, error) {
    return JSON.stringify(failureObject(id, error));
}
export function failureObject(id, error) {
    return { jsonrpc: '2.0', id, error: toJsonRpcError(error) };
}
//# sourceMappingURL=rpc.js.map