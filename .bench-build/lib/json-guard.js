// The one entry point from request text to a JSON value, for every binding (JSON-RPC
// bodies, WebSocket frames, REST bodies). Hostile nesting is refused by a linear scan
// before JSON.parse, so no parse, schema check or re-serialisation ever walks a tree
// deeper than the limit, and the scan stops at the first bracket past it.
import { InvalidRequestError, JsonParseError } from './errors/index.js';
/** Default `maxJsonDepth`: arrays and objects nested inside one another. */
export const DEFAULT_MAX_JSON_DEPTH = 64;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/**
 * The offset of the first `{` or `[` (outside strings) that opens a container deeper than
 * `maxDepth`, or -1 when there is none. Brackets inside strings do not count. On text that
 * is not JSON the answer only decides which error the caller reports.
 */
export function depthExceededAt(text, maxDepth) {
    let depth = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inString) {
            if (c === BACKSLASH)
                i++;
            else if (c === QUOTE)
                inString = false;
        }
        else if (c === QUOTE) {
            inString = true;
        }
        else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
            if (++depth > maxDepth)
                return i;
        }
        else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
            depth--;
        }
    }
    return -1;
}
/**
 * Parses request text: too deep → InvalidRequest (-32600, HTTP 400), not JSON → JsonParse
 * (-32700, HTTP 400). The caller has already applied the size limit.
 */
export function parseJson(text, maxDepth) {
    if (depthExceededAt(text, maxDepth) !== -1) {
        return { ok: false, error: new InvalidRequestError(`JSON nested deeper than ${maxDepth} levels`) };
    }
    try {
        return { ok: true, value: JSON.parse(text) };
    }
    catch {
        return { ok: false, error: new JsonParseError() };
    }
}
//# sourceMappingURL=json-guard.js.map