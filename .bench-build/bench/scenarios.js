// The scenarios of issue 8. Each starts the servers it compares, warms them up, then
// takes its repetitions in turn across the servers (ours, peer, ceiling, ours, …) so
// that the machine's drift during a run falls on every server alike.
import { setTimeout as sleep } from 'node:timers/promises';
import { withServers } from './harness/servers.js';
import { Samples, percentile } from './harness/stats.js';
import { checkAnswer, measureHttp } from './load/http.js';
import { measureSse } from './load/sse.js';
import { closeSocket, dropAll, measurePipeline, measureWsStream, openIdle, openSocket, sequentialLatencies } from './load/ws.js';
import { JSONRPC_PATH, REST_PATH } from './servers/a2a-js.js';
const V1 = { 'a2a-version': '1.0' };
const JSON_HEADERS = { 'content-type': 'application/json', ...V1 };
const userMessage = (text) => ({ messageId: 'bench', role: 'ROLE_USER', parts: [{ text }] });
const rpc = (id, method, params) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const wsUrl = (origin) => origin.replace(/^http/, 'ws') + '/?A2A-Version=1.0';
const completed = (text) => text.includes('"TASK_STATE_COMPLETED"');
const cpuPerCall = (before, after, calls) => (after.user + after.system - before.user - before.system) / calls;
export async function httpUnary(plan) {
    return await withServers(['fastify-a2a', 'a2a-js', 'bare-fastify'], async (servers) => {
        const rpcBody = rpc(1, 'SendMessage', { message: userMessage('hello') });
        const restBody = JSON.stringify({ message: userMessage('hello') });
        const ours = servers['fastify-a2a'];
        const peer = servers['a2a-js'];
        const ceiling = servers['bare-fastify'];
        const targets = [
            { name: 'p1.ours', server: ours, url: ours.origin + '/', body: rpcBody, expect: completed },
            { name: 'p1.peer', server: peer, url: peer.origin + JSONRPC_PATH, body: rpcBody, expect: completed },
            { name: 'p1.ceiling', server: ceiling, url: ceiling.origin + '/', body: rpcBody, expect: (text) => text.includes('"ok":true') },
            { name: 'rest.ours', server: ours, url: ours.origin + '/message:send', body: restBody, expect: completed },
            { name: 'rest.peer', server: peer, url: peer.origin + REST_PATH + '/message:send', body: restBody, expect: completed }
        ];
        const load = (target, durationSec) => measureHttp({ url: target.url, body: target.body, headers: JSON_HEADERS, connections: plan.httpConnections, durationSec });
        for (const target of targets) {
            await checkAnswer(target.url, target.body, JSON_HEADERS, target.expect);
            await load(target, plan.warmupSeconds);
        }
        const samples = new Samples();
        for (let rep = 0; rep < plan.repetitions; rep++) {
            for (const target of targets) {
                const cpuBefore = await target.server.cpu();
                const result = await load(target, plan.httpSeconds);
                samples.add(`${target.name}.rps`, result.requestsPerSec);
                samples.add(`${target.name}.p99`, result.p99Ms);
                samples.add(`${target.name}.cpu`, cpuPerCall(cpuBefore, await target.server.cpu(), result.total));
                // Still answering correctly after the load (a JSON-RPC error is a 200 too).
                await checkAnswer(target.url, target.body, JSON_HEADERS, target.expect);
            }
        }
        return samples.figures();
    });
}
export async function webSocketUnary(plan) {
    return await withServers(['fastify-a2a', 'bare-ws'], async (servers) => {
        const params = JSON.stringify({ message: userMessage('hello') });
        // The same frame to both: the echo server sends it back, ours answers it.
        const frame = (id) => `{"jsonrpc":"2.0","id":${id},"method":"SendMessage","params":${params}}`;
        const targets = [
            {
                name: 'p2.ours',
                server: servers['fastify-a2a'],
                url: wsUrl(servers['fastify-a2a'].origin),
                check: (reply) => { if (reply.result?.task?.status?.state !== 'TASK_STATE_COMPLETED')
                    throw new Error(`P2: ${JSON.stringify(reply).slice(0, 300)}`); }
            },
            {
                name: 'p2.ceiling',
                server: servers['bare-ws'],
                url: servers['bare-ws'].origin.replace(/^http/, 'ws'),
                check: (reply) => { if (reply.method !== 'SendMessage')
                    throw new Error(`P2 echo: ${JSON.stringify(reply).slice(0, 300)}`); }
            }
        ];
        const load = (target, durationMs) => measurePipeline({ url: target.url, frame, check: target.check, inFlight: plan.inFlight, durationMs, maxCalls: 2_000_000 });
        for (const target of targets)
            await load(target, plan.warmupSeconds * 1000);
        const samples = new Samples();
        for (let rep = 0; rep < plan.repetitions; rep++) {
            for (const target of targets) {
                const cpuBefore = await target.server.cpu();
                const result = await load(target, plan.pipelineMs);
                samples.add(`${target.name}.rtps`, result.roundTripsPerSec);
                samples.add(`${target.name}.cpu`, cpuPerCall(cpuBefore, await target.server.cpu(), result.completed));
            }
        }
        return samples.figures();
    });
}
/** The events of a `stream <N>` turn: the task, `working`, N chunks, `completed`. */
const streamEvents = (chunks) => chunks + 3;
const STREAM_TIMEOUT_MS = 120_000;
export async function streaming(plan) {
    return await withServers(['fastify-a2a', 'a2a-js'], async (servers) => {
        const ours = servers['fastify-a2a'].origin;
        const request = (chunks) => rpc(1, 'SendStreamingMessage', { message: userMessage(`stream ${chunks}`) });
        const overWebSocket = async (chunks) => {
            const result = await measureWsStream(wsUrl(ours), request(chunks), (frame) => frame.result?.status === 'stream_complete', STREAM_TIMEOUT_MS);
            // Every event, then the end marker.
            if (result.events !== streamEvents(chunks) + 1 || result.last.result?.status !== 'stream_complete') {
                throw new Error(`P3 WebSocket ${chunks}: ${result.events} frames, last ${JSON.stringify(result.last).slice(0, 300)}`);
            }
            return result.ms;
        };
        const overSse = async (origin, chunks, exactEvents) => {
            const result = await measureSse(origin, request(chunks), JSON_HEADERS, STREAM_TIMEOUT_MS);
            const ended = result.last?.result?.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED';
            const counted = exactEvents ? result.events === streamEvents(chunks) : result.events >= chunks;
            if (!ended || !counted)
                throw new Error(`P3 SSE ${origin} ${chunks}: ${result.events} events, last ${JSON.stringify(result.last).slice(0, 300)}`);
            return result.ms;
        };
        const bindings = [
            { name: 'p3.ws', chunks: plan.streamChunks, run: (chunks) => overWebSocket(chunks) },
            { name: 'p3.sse', chunks: plan.streamChunks, run: (chunks) => overSse(ours + '/', chunks, true) },
            { name: 'p3.peer', chunks: plan.peerStreamChunks, run: (chunks) => overSse(servers['a2a-js'].origin + JSONRPC_PATH, chunks, false) }
        ];
        const failures = {};
        // A stream that fails (STREAM_LAGGED, say) is a result to report, not a reason to stop the bench.
        const attempt = async (binding, chunks) => {
            if (failures[binding.name] !== undefined)
                return undefined;
            try {
                return await binding.run(chunks);
            }
            catch (error) {
                failures[binding.name] = error instanceof Error ? error.message : String(error);
                return undefined;
            }
        };
        for (const binding of bindings)
            await attempt(binding, binding.chunks[0] / 10);
        const samples = new Samples();
        for (let rep = 0; rep < plan.repetitions; rep++) {
            for (const binding of bindings) {
                const [small, large] = binding.chunks;
                const smallMs = await attempt(binding, small);
                const largeMs = await attempt(binding, large);
                if (smallMs === undefined || largeMs === undefined)
                    continue;
                samples.add(`${binding.name}.small.ms`, smallMs);
                samples.add(`${binding.name}.large.ms`, largeMs);
                samples.add(`${binding.name}.ratio`, largeMs / smallMs);
                samples.add(`${binding.name}.eventsPerSec`, streamEvents(large) / (largeMs / 1000));
            }
        }
        return { figures: samples.figures(), failures };
    });
}
/** Handshakes in progress at once while the idle connections are opened. */
const OPENING_PARALLEL = 64;
/** Time for the garbage of the handshakes to become collectable before memory is read. */
const SETTLE_MS = 1000;
export async function idleConnections(plan) {
    const samples = new Samples();
    const [small, large] = plan.idleCounts;
    for (let rep = 0; rep < plan.repetitions; rep++) {
        for (const kind of plan.idleCeiling ? ['fastify-a2a', 'bare-ws'] : ['fastify-a2a']) {
            // A fresh server each time: its baseline is not what an earlier rep left behind.
            await withServers([kind], async (servers) => {
                const server = servers[kind];
                const url = kind === 'fastify-a2a' ? wsUrl(server.origin) : server.origin.replace(/^http/, 'ws');
                const name = kind === 'fastify-a2a' ? 'p4.ours' : 'p4.ceiling';
                // One connection and call first, so that what is loaded once is in the baseline.
                const warm = await openSocket(url);
                await sequentialLatencies(warm, (id) => rpc(id, 'SendMessage', { message: userMessage('hello') }), () => { }, 10);
                await closeSocket(warm);
                await sleep(SETTLE_MS);
                const baseline = await server.memory();
                const held = await openIdle(url, small, OPENING_PARALLEL);
                try {
                    await sleep(SETTLE_MS);
                    const atSmall = await server.memory();
                    samples.add(`${name}.small.heap`, (atSmall.heapUsed - baseline.heapUsed) / small);
                    samples.add(`${name}.small.rss`, (atSmall.rss - baseline.rss) / small);
                    held.push(...await openIdle(url, large - small, OPENING_PARALLEL));
                    await sleep(SETTLE_MS);
                    const atLarge = await server.memory();
                    samples.add(`${name}.large.heap`, (atLarge.heapUsed - baseline.heapUsed) / large);
                    samples.add(`${name}.large.rss`, (atLarge.rss - baseline.rss) / large);
                    if (kind === 'fastify-a2a')
                        samples.add('p4.ours.getTaskP99', await getTaskP99(url, plan.getTaskCalls));
                }
                finally {
                    await dropAll(held);
                }
            });
        }
    }
    return samples.figures();
}
/** GetTask of a completed task, call after call on a connection opened now. */
async function getTaskP99(url, calls) {
    const socket = await openSocket(url);
    try {
        const [created] = await new Promise((resolve, reject) => {
            socket.once('message', (data) => resolve([JSON.parse(data.toString())]));
            socket.once('error', reject);
            socket.send(rpc(0, 'SendMessage', { message: userMessage('hello') }));
        });
        const taskId = created.result?.task?.id;
        if (typeof taskId !== 'string')
            throw new Error(`P4: no task created: ${JSON.stringify(created).slice(0, 300)}`);
        const latencies = await sequentialLatencies(socket, (id) => rpc(id, 'GetTask', { id: taskId }), (reply) => {
            if (reply.result?.id !== taskId)
                throw new Error(`P4 GetTask: ${JSON.stringify(reply).slice(0, 300)}`);
        }, calls);
        return percentile(latencies, 0.99);
    }
    finally {
        await closeSocket(socket);
    }
}
//# sourceMappingURL=scenarios.js.map