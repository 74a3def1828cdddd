// The server `npm run fuzz` drives, in a process of its own: the client and the server each
// get a core, and a crash or an unhandled rejection here ends the run as a failure.
import { fuzzServerOptions } from '../helpers/fuzz.js'
import { startServer } from '../helpers/server.js'

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`unhandled rejection: ${String((reason as Error)?.stack ?? reason)}\n`)
  process.exit(3)
})
const server = await startServer(fuzzServerOptions)
process.stdout.write(`listening on ${server.origin}\n`)
process.on('SIGTERM', () => {
  server.close().then(() => {
    // Executions left running would show here: the property says none may be.
    process.stdout.write(`closed: ${server.fastify.a2a.handler.runningExecutions} executions running\n`)
    process.exit(0)
  }, () => process.exit(1))
})
