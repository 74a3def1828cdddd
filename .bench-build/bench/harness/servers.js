// Starts a bench server in a process of its own (the load generator is this process)
// and talks to it over IPC. BENCH_CPU_PROF=<dir> profiles this project's server
// (`node --cpu-prof`), for finding per-request work.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
const SERVER_ENTRY = fileURLToPath(new URL('../server.js', import.meta.url));
const START_TIMEOUT_MS = 20_000;
export async function startServer(kind) {
    const profileDir = process.env.BENCH_CPU_PROF;
    const flags = ['--expose-gc', ...(profileDir !== undefined && kind === (process.env.BENCH_CPU_PROF_KIND ?? 'fastify-a2a') ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
    const child = spawn(process.execPath, [...flags, SERVER_ENTRY, kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const exited = once(child, 'exit');
    const port = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${kind}: not listening after ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
        child.on('message', (message) => {
            if (message.type === 'listening') {
                clearTimeout(timer);
                resolve(message.port);
            }
        });
        exited.then(([code]) => { clearTimeout(timer); reject(new Error(`${kind}: exited (${String(code)}) before listening`)); }, () => { });
    });
    let nextId = 0;
    return {
        kind,
        origin: `http://127.0.0.1:${port}`,
        memory: () => ask(child, { type: 'memory', id: ++nextId }),
        cpu: () => ask(child, { type: 'cpu', id: ++nextId }),
        async stop() {
            if (child.exitCode !== null || child.signalCode !== null)
                return;
            child.kill('SIGTERM');
            await exited;
        }
    };
}
/** One question to the server process, answered by the reply with the same id (without type and id). */
function ask(child, message) {
    return new Promise((resolve, reject) => {
        const onMessage = (reply) => {
            if (reply.type !== message.type || !('id' in reply) || reply.id !== message.id)
                return;
            child.off('message', onMessage);
            const { type: _type, id: _id, ...report } = reply;
            resolve(report);
        };
        child.on('message', onMessage);
        child.send(message, (error) => { if (error !== null)
            reject(error); });
    });
}
/** Starts the servers in turn and stops them all however `use` ends. */
export async function withServers(kinds, use) {
    const started = [];
    try {
        for (const kind of kinds)
            started.push(await startServer(kind));
        return await use(Object.fromEntries(started.map(server => [server.kind, server])));
    }
    finally {
        await Promise.all(started.map(server => server.stop()));
    }
}
//# sourceMappingURL=servers.js.map