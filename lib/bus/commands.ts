// Commands to one instance travel as JSON on a channel of their own, on every bus across instances.
import type { BusCommand, CommandHandler } from './types.js'

/** Hands the command in `message` to `handler`; a message that is not JSON is dropped. */
export function deliverCommand (handler: CommandHandler, message: string): void {
  let command: BusCommand
  try {
    command = JSON.parse(message) as BusCommand
  } catch {
    return
  }
  handler(command)
}
