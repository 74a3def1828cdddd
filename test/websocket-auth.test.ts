// Seed 000 §6: credentials come from the upgrade headers and are checked on every call;
// a refusal is -32600 with an ErrorInfo of the binding's domain carrying the challenge.
import t from 'tap'
import { PermissionDeniedError, UnauthenticatedError, retryInfo, type A2AInterceptor } from '../lib/index.js'
import { startServer, userMessage } from './helpers/server.js'
import { connect, wsUrl } from './helpers/ws.js'

const challenge = 'Bearer realm="a2a"'
let validToken = 'token-1'
/** A minimal bearer check: the interceptor chain of its own issue builds on this hook. */
const bearer: A2AInterceptor = {
  before (context) {
    const header = context.serviceParams.authorization
    if (header === undefined) throw new UnauthenticatedError().with({ metadata: { 'www-authenticate': challenge } })
    if (header !== `Bearer ${validToken}`) {
      throw new UnauthenticatedError().with({ metadata: { 'www-authenticate': `${challenge}, error="invalid_token"` } })
    }
    if (context.method === 'CancelTask') throw new PermissionDeniedError().with({ details: [retryInfo(0)] })
    context.identity = { subject: 'alice' }
  }
}

const server = await startServer({ interceptors: [bearer] })
t.teardown(() => server.close())

t.test('no credential → -32600 UNAUTHENTICATED with www-authenticate, on every call', async t => {
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  for (const id of ['a', 'b']) {
    t.same(await client.request('GetTask', { id: 'x' }, id), {
      jsonrpc: '2.0',
      id,
      error: {
        code: -32600,
        message: 'authentication required',
        data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': challenge } }]
      }
    })
  }
  t.equal(client.socket.readyState, client.socket.OPEN, 'the connection stays open')
})

t.test('a valid credential in the upgrade headers serves every call; the executor sees it', async t => {
  const client = await connect(wsUrl(server.origin), { headers: { Authorization: 'Bearer token-1' } })
  t.teardown(() => client.close())
  const reply = await client.request('SendMessage', { message: userMessage('params') })
  t.equal(reply.result.task.artifacts[0].parts[0].data.authorization, 'Bearer token-1')
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001)
})

t.test('a forbidden caller → -32600 PERMISSION_DENIED, other details first', async t => {
  const client = await connect(wsUrl(server.origin), { headers: { Authorization: 'Bearer token-1' } })
  t.teardown(() => client.close())
  const reply = await client.request('CancelTask', { id: 'x' })
  t.same(reply.error, {
    code: -32600,
    message: 'permission denied',
    data: [
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0s' },
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PERMISSION_DENIED', domain: 'a2a-rust.com' }
    ]
  })
})

t.test('a credential that stops being valid is refused from then on; the connection stays open', async t => {
  const client = await connect(wsUrl(server.origin), { headers: { Authorization: 'Bearer token-1' } })
  t.teardown(() => { client.close(); validToken = 'token-1' })
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001)
  validToken = 'token-2'
  const refused = await client.request('GetTask', { id: 'x' })
  t.equal(refused.error.code, -32600)
  t.same(refused.error.data[0].metadata, { 'www-authenticate': `${challenge}, error="invalid_token"` })
  t.equal(client.socket.readyState, client.socket.OPEN)
})
