import t from 'tap'
import { startServer, userMessage } from './helpers/server.js'
import { connectV1, v1Url } from './helpers/ws-a2a-v1.js'
t.test('probe', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connectV1(v1Url(server.origin))
  for (const n of [1000, 1100]) {
    const frames = await client.stream(`s${n}`, 'SendStreamingMessage', { message: userMessage(`stream ${n}`) })
    console.log(n, frames.length, JSON.stringify(frames.at(-1)).slice(0, 160))
  }
  client.close()
})
