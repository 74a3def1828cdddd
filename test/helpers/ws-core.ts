// The WebSocket connection logic alone (makeWebSocketServer over a fake socket): the
// conformance agent behind a request handler with memory stores, no Fastify, no network.
import { MemoryEventBus, MemoryPushConfigStore, MemoryTaskStore, RequestHandler, makeWebSocketServer } from '../../lib/index.js'
import { CallRunner } from '../../lib/dispatcher/call.js'
import { conformanceAgent, conformanceCard } from '../../examples/agent.js'

export function makeConnectionServer (overrides: Partial<Parameters<typeof makeWebSocketServer>[0]> = {}) {
  const handler = new RequestHandler({
    executor: conformanceAgent,
    taskStore: new MemoryTaskStore(),
    pushConfigStore: new MemoryPushConfigStore(),
    bus: new MemoryEventBus(),
    capabilities: conformanceCard.capabilities,
    maxQueuedEvents: 100,
    logger: { error () {}, warn () {} }
  })
  const runner = new CallRunner({ handler, capabilities: conformanceCard.capabilities, allowMissingVersion: false, interceptors: [], logger: { error () {}, warn () {} } })
  return makeWebSocketServer({ runner, maxInFlight: 64, maxMessageSize: 1024, maxBufferedBytes: 1000, idleTimeout: 0, onError () {}, ...overrides })
}

/** What a connection learnt at its handshake, for a seed 000 client sending A2A-Version 1.0. */
export const connectionInfo = { serviceParams: Object.freeze({ 'a2a-version': '1.0' }), version: '1.0', extensions: [] }
