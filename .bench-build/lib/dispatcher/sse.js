import { toA2AError } from '../errors/index.js';
const openResponses = new WeakMap();
/**
 * The SSE responses being written on one HTTP server (`fastify.server`): shutdown
 * destroys those still open once their streams had their grace.
 */
export function sseResponses(server) {
    let responses = openResponses.get(server);
    if (responses === undefined)
        openResponses.set(server, responses = new Set());
    return responses;
}
/**
 * Writes the stream as `text/event-stream`. The first event has already been read by
 * the caller (errors before it are plain responses); a reader that disconnects releases
 * the subscription at once.
 */
export async function writeSse(reply, first, events, render, onError) {
    const raw = reply.raw;
    reply.hijack();
    const headers = {};
    for (const [name, value] of Object.entries(reply.getHeaders()))
        if (value !== undefined)
            headers[name] = value;
    raw.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no'
    });
    let gone = false;
    const release = () => {
        gone = true;
        void events.return?.();
    };
    raw.on('close', release);
    const open = sseResponses(reply.server.server);
    open.add(raw);
    try {
        if (!write(raw, `data: ${render.event(first)}\n\n`))
            await drained(raw);
        for (let next = await events.next(); next.done !== true && !gone; next = await events.next()) {
            if (!write(raw, `data: ${render.event(next.value)}\n\n`))
                await drained(raw);
        }
    }
    catch (thrown) {
        const error = toA2AError(thrown);
        onError(error);
        if (!gone)
            raw.write(`event: error\ndata: ${render.error(error)}\n\n`);
    }
    finally {
        raw.off('close', release);
        open.delete(raw);
        await events.return?.();
        raw.end();
    }
}
function write(raw, chunk) {
    return raw.destroyed ? true : raw.write(chunk);
}
function drained(raw) {
    return new Promise(resolve => {
        const done = () => {
            raw.off('drain', done);
            raw.off('close', done);
            resolve();
        };
        raw.on('drain', done);
        raw.on('close', done);
    });
}
//# sourceMappingURL=sse.js.map