import { ExtensionSupportRequiredError, UnavailableError, UnsupportedOperationError, VersionNotSupportedError, invalidParams, toA2AError } from '../errors/index.js';
import { requestedExtensions, serviceParamsFromHeaders } from '../service-params.js';
import * as requests from '../schema/requests.js';
import { compile } from '../schema/validate.js';
function method(name, kind, validate, invoke) {
    return { name, kind, validate, invoke };
}
/** The eleven v1.0 methods (spec §3), by their JSON-RPC names. */
export const methods = new Map([
    method('SendMessage', 'unary', compile(requests.SendMessageRequest), (h, p, c) => h.sendMessage(p, c)),
    method('SendStreamingMessage', 'stream', compile(requests.SendMessageRequest), (h, p, c) => h.sendStreamingMessage(p, c)),
    method('GetTask', 'unary', compile(requests.GetTaskRequest), (h, p, c) => h.getTask(p, c)),
    method('ListTasks', 'unary', compile(requests.ListTasksRequest), (h, p, c) => h.listTasks(p, c)),
    method('CancelTask', 'unary', compile(requests.CancelTaskRequest), (h, p, c) => h.cancelTask(p, c)),
    method('SubscribeToTask', 'stream', compile(requests.SubscribeToTaskRequest), (h, p, c) => h.subscribeToTask(p, c)),
    method('CreateTaskPushNotificationConfig', 'unary', compile(requests.CreateTaskPushNotificationConfigRequest), (h, p, c) => h.createTaskPushNotificationConfig(p, c)),
    method('GetTaskPushNotificationConfig', 'unary', compile(requests.GetTaskPushNotificationConfigRequest), (h, p, c) => h.getTaskPushNotificationConfig(p, c)),
    method('ListTaskPushNotificationConfigs', 'unary', compile(requests.ListTaskPushNotificationConfigsRequest), (h, p, c) => h.listTaskPushNotificationConfigs(p, c)),
    method('DeleteTaskPushNotificationConfig', 'unary', compile(requests.DeleteTaskPushNotificationConfigRequest), (h, p, c) => h.deleteTaskPushNotificationConfig(p, c)),
    method('GetExtendedAgentCard', 'unary', compile(requests.GetExtendedAgentCardRequest), (h, p, c) => h.getExtendedAgentCard(p, c))
].map(spec => [spec.name, spec]));
const SUPPORTED_VERSION = /^1\.0(\.\d+)?$/;
/** The context of a call made by an HTTP request: its headers as service parameters, plus `:path`. */
export function httpCallContext(binding, method, request, tenant = '') {
    const serviceParams = serviceParamsFromHeaders(request.raw.rawHeaders);
    serviceParams[':path'] = request.url.split('?')[0];
    return { binding, method, serviceParams, tenant, extensions: requestedExtensions(serviceParams) };
}
/**
 * The stream as the dispatcher reads it, reporting how it ended: its last event read,
 * an error, or the reader leaving (`return`). What the queue buffers stays visible.
 */
function observeEnd(events, complete) {
    const observed = {
        get buffered() { return events.buffered; },
        async next() {
            try {
                const next = await events.next();
                if (next.done === true)
                    complete({ status: 'succeeded' });
                return next;
            }
            catch (error) {
                complete({ status: 'failed', error: toA2AError(error) });
                throw error;
            }
        },
        async return() {
            complete({ status: 'cancelled' });
            return await (events.return?.() ?? Promise.resolve({ value: undefined, done: true }));
        },
        [Symbol.asyncIterator]() { return observed; }
    };
    return observed;
}
export class CallRunner {
    #options;
    #supported;
    #required;
    #inFlight = 0;
    #refusing = false;
    constructor(options) {
        this.#options = options;
        const extensions = options.capabilities.extensions ?? [];
        this.#supported = new Set(extensions.flatMap(e => e.uri === undefined ? [] : [e.uri]));
        this.#required = extensions.flatMap(e => e.required === true && e.uri !== undefined ? [e.uri] : []);
    }
    /**
     * Runs the interceptor chain, validates `params` and runs the call. `context.extensions`
     * holds the requested extensions on entry and the activated ones on return. `version` is
     * the requested A2A-Version (undefined when absent). Every interceptor's `onComplete`
     * runs exactly once: when a unary call settles, or when a stream ends, fails or is left.
     */
    async run(spec, params, version, context, request) {
        const call = { params, request };
        const complete = this.#completion(context, call);
        try {
            if (this.#refusing)
                throw new UnavailableError('the server is shutting down');
            for (const interceptor of this.#options.interceptors)
                await interceptor.before?.(context, call);
            const checked = spec.validate.check(params ?? {});
            if (!checked.ok)
                throw invalidParams(checked.violations);
            this.#checkVersion(version);
            context.extensions = this.#activate(context.extensions);
            const tenant = checked.value.tenant;
            if (context.tenant === '' && typeof tenant === 'string')
                context.tenant = tenant;
            if (context.tenant !== '' && !this.#options.handler.isolatesTenants) {
                throw new UnsupportedOperationError(`tenant "${context.tenant}": this server's stores cannot keep tenants apart`);
            }
            const value = await spec.invoke(this.#options.handler, checked.value, context);
            if (spec.kind === 'unary') {
                complete({ status: 'succeeded' });
                return { kind: 'unary', value };
            }
            return { kind: 'stream', events: observeEnd(value, complete) };
        }
        catch (error) {
            complete({ status: 'failed', error: toA2AError(error) });
            throw error;
        }
    }
    /** Calls in progress on every binding; a stream counts until it ends, fails or is left. */
    get inFlight() {
        return this.#inFlight;
    }
    /** Shutdown: from now on every call is refused with Unavailable (-32603, HTTP 503). */
    refuseNewCalls() {
        this.#refusing = true;
    }
    /** The once-only completion of a call: every interceptor's onComplete, errors logged, never thrown. */
    #completion(context, call) {
        let done = false;
        this.#inFlight++;
        return (outcome) => {
            if (done)
                return;
            done = true;
            this.#inFlight--;
            for (const interceptor of this.#options.interceptors) {
                if (interceptor.onComplete === undefined)
                    continue;
                Promise.resolve()
                    .then(() => interceptor.onComplete?.(context, outcome, call))
                    .catch((error) => this.#options.logger.error({ err: error }, 'interceptor onComplete failed'));
            }
        };
    }
    #checkVersion(version) {
        if (version === undefined) {
            // A missing A2A-Version means 0.3 (spec §3.6.2).
            if (this.#options.allowMissingVersion)
                return;
            throw new VersionNotSupportedError('0.3 (no A2A-Version was sent)').with({ metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } });
        }
        if (!SUPPORTED_VERSION.test(version)) {
            throw new VersionNotSupportedError(version).with({ metadata: { requestedVersion: version, supportedVersions: '1.0' } });
        }
    }
    #activate(requested) {
        const activated = requested.filter(uri => this.#supported.has(uri));
        for (const uri of this.#required) {
            if (!activated.includes(uri))
                throw new ExtensionSupportRequiredError(uri).with({ metadata: { extension: uri } });
        }
        return activated;
    }
}
//# sourceMappingURL=call.js.map