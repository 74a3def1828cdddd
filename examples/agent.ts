// The conformance agent of shared/sut-agent.md: its behaviour is keyed on the first text
// part of the user message. It is also the example to read first.
import { setTimeout as sleep } from 'node:timers/promises'
import type { AgentCardInput, AgentExecutor } from '../lib/index.js'

export const conformanceCard: AgentCardInput = {
  name: 'fastify-a2a conformance agent',
  description: 'Echoes, streams, holds, fails and asks for input on command, to drive every part of A2A v1.0.',
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [{
    id: 'conformance',
    name: 'Conformance commands',
    description: 'echo (default), message <text>, stream <N>, hold, sleep <ms>, input, fail, reject, params, throw',
    tags: ['conformance', 'echo'],
    examples: ['hello', 'stream 3', 'message hi']
  }]
}

const COMMANDS = new Set(['hold', 'input', 'fail', 'reject', 'params', 'throw'])
const COMMAND_WITH_ARGUMENT = /^(message) ([^]*)$|^(stream|sleep) (\d+)$/

export const conformanceAgent: AgentExecutor = {
  async execute (context, events) {
    const text = context.message.parts.find(part => part.text !== undefined)?.text ?? ''

    // A task waiting for input completes with the next message, whatever it says.
    if (context.task?.status.state === 'TASK_STATE_INPUT_REQUIRED') {
      await events.artifact({ artifactId: 'echo', parts: [{ text }] })
      return events.completed()
    }

    // A command is the whole text (`fail now` or `stream` alone is none, so it is echoed);
    // `message`, `stream` and `sleep` take what follows one space: any text, a count, ms.
    const withArgument = COMMAND_WITH_ARGUMENT.exec(text)
    const command = withArgument === null ? (COMMANDS.has(text) ? text : 'echo') : withArgument[1] ?? withArgument[3]
    const argument = withArgument === null ? '' : withArgument[2] ?? withArgument[4] ?? ''
    switch (command) {
      case 'message':
        return events.message(argument)
      case 'stream': {
        const count = Number(argument)
        await events.working()
        for (let i = 1; i <= count; i++) {
          await events.artifact({ artifactId: 'stream', parts: [{ text: `chunk ${i}` }] }, { append: i > 1, lastChunk: i === count })
        }
        return events.completed()
      }
      case 'hold':
        await events.working()
        // Ends when CancelTask aborts the signal; the plugin then marks the task canceled.
        await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
        return
      case 'sleep': {
        const ms = Number(argument)
        await events.working()
        try {
          await sleep(ms, undefined, { signal: context.signal })
        } catch {
          return
        }
        await events.artifact({ artifactId: 'slept', parts: [{ text: `slept ${ms}` }] })
        return events.completed()
      }
      case 'input':
        return events.inputRequired('need input')
      case 'fail':
        return events.failed('failed on purpose')
      case 'reject':
        return events.rejected()
      case 'params':
        await events.artifact({ artifactId: 'params', parts: [{ data: { ...context.serviceParams } }] })
        return events.completed()
      case 'throw':
        throw new Error('thrown on purpose')
      default:
        await events.working()
        await events.artifact({ artifactId: 'echo', parts: [{ text }] })
        return events.completed()
    }
  }
}
