// One streaming call over HTTP, read as server-sent events to the end of the response.
import http from 'node:http';
/** POSTs `body` and times the response from the request to its end; every event is parsed. */
export function measureSse(url, body, headers, timeoutMs) {
    return new Promise((resolve, reject) => {
        const start = process.hrtime.bigint();
        const request = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
            if (response.statusCode !== 200 || !String(response.headers['content-type']).startsWith('text/event-stream')) {
                response.resume();
                reject(new Error(`${url}: ${response.statusCode} ${response.headers['content-type']}`));
                return;
            }
            let buffer = '';
            let events = 0;
            let last;
            response.setEncoding('utf8');
            response.on('data', (chunk) => {
                buffer += chunk;
                let end = buffer.indexOf('\n\n');
                let from = 0;
                while (end !== -1) {
                    const block = buffer.slice(from, end);
                    const data = block.slice(block.indexOf('data: ') + 6);
                    last = JSON.parse(data);
                    events++;
                    from = end + 2;
                    end = buffer.indexOf('\n\n', from);
                }
                buffer = buffer.slice(from);
            });
            response.on('end', () => {
                clearTimeout(timer);
                resolve({ ms: Number(process.hrtime.bigint() - start) / 1e6, events, last });
            });
            response.on('error', reject);
        });
        const timer = setTimeout(() => request.destroy(new Error(`${url}: the stream did not end within ${timeoutMs} ms`)), timeoutMs);
        request.on('error', (error) => { clearTimeout(timer); reject(error); });
        request.end(body);
    });
}
//# sourceMappingURL=sse.js.map