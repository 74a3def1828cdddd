// The SSRF guard on webhook URLs (spec §11, §13): what is refused at config creation
// (InvalidParams naming `url`), what is caught again at delivery after DNS, and the
// allow-list. Every URL that could be reached points at a local receiver, so a guard
// that let one through would be seen; no traffic ever goes to a non-loopback address
// (names resolve through a fake resolver; refused literals are never connected to).
import t, { type Test } from 'tap'
import { isBlockedAddress, type PushDeliveryReport, type PushSender, type ResolvedAddress } from '../lib/index.js'
import { call, result, startServer, userMessage } from './helpers/server.js'
import { rest } from './helpers/rest.js'
import { startReceiver } from './helpers/webhook.js'

t.test('isBlockedAddress: internal addresses in every spelling are blocked, public ones are not', async t => {
  const blocked = [
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '169.254.0.1',
    '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '198.18.0.1',
    '::1', '::', '[::1]', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd00:ec2::254', 'ff02::1', 'fec0::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b::10.1.2.3', '2002:7f00:1::1', '2002:a00:1::',
    // IPv4-translated (::ffff:0:a.b.c.d), local-use NAT64, Teredo, the 6to4 relay anycast
    '::ffff:0:7f00:1', '::ffff:0:10.0.0.1', '64:ff9b:1::1', '64:ff9b:1:ffff::8.8.8.8', '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '192.88.99.1',
    'not an address'
  ]
  const allowed = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '::ffff:0:808:808', '2001:4860:4860::8888']
  for (const address of blocked) t.equal(isBlockedAddress(address), true, `${address} is blocked`)
  for (const address of allowed) t.equal(isBlockedAddress(address), false, `${address} is public`)
})

/** A resolver answering from a table the test changes; unknown names do not resolve. */
function fakeDns () {
  const table = new Map<string, ResolvedAddress[]>()
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    const found = table.get(hostname)
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
    return found
  }
  return { table, resolve }
}

async function setup (t: Test, allow: string[] = []) {
  const receiver = await startReceiver()
  const dns = fakeDns()
  const reports: PushDeliveryReport[] = []
  const server = await startServer({ push: { allow, resolve: dns.resolve, retryDelay: 1, onDelivery: report => reports.push(report) } })
  t.teardown(async () => {
    await server.close()
    await receiver.close()
  })
  const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('input') })).task
  return { receiver, dns, reports, url: server.endpoint, task, sender: server.fastify.a2a.push as PushSender }
}

function refusedUrl (t: Test, error: any, what: string) {
  t.equal(error?.code, -32602, `${what}: InvalidParams`)
  t.equal(error?.data?.[0]?.['@type'], 'type.googleapis.com/google.rpc.BadRequest', `${what}: a BadRequest detail`)
  t.equal(error?.data?.[0]?.fieldViolations?.[0]?.field, 'url', `${what}: names url`)
}

t.test('without an allow-list, creation refuses loopback, private, link-local, metadata and local names', async t => {
  const { receiver, dns, url, task, sender } = await setup(t)
  dns.table.set('loopback.test', [{ address: '127.0.0.1', family: 4 }])
  dns.table.set('mixed.test', [{ address: '93.184.216.34', family: 4 }, { address: '::1', family: 6 }])
  const port = receiver.port
  const urls = [
    `http://127.0.0.1:${port}/hook`,
    'http://10.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    `http://[::1]:${port}/hook`,
    `http://loopback.test:${port}/hook`,
    `http://mixed.test:${port}/hook`,
    `http://localhost:${port}/hook`,
    `http://app.localhost:${port}/hook`,
    `http://LOCALHOST.:${port}/hook`,
    `http://2130706433:${port}/hook`,
    `http://0x7f.1:${port}/hook`,
    `http://[::ffff:127.0.0.1]:${port}/hook`,
    'https://[fd00:ec2::254]/latest/meta-data/',
    'http://192.168.0.10/hook',
    'http://0.0.0.0/hook'
  ]
  for (const webhook of urls) {
    const { error } = await call(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: webhook })
    refusedUrl(t, error, webhook)
  }
  const inline = await call(url, 'SendMessage', {
    message: userMessage('hello', { contextId: 'ssrf-inline' }),
    configuration: { taskPushNotificationConfig: { url: `http://127.0.0.1:${port}/inline` } }
  })
  refusedUrl(t, inline.error, 'an inline config')
  t.equal((await result(url, 'ListTasks', { contextId: 'ssrf-inline' })).tasks.length, 0, 'a refused inline config starts no task')
  t.same((await result(url, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs, [], 'nothing was stored')
  await result(url, 'SendMessage', { message: userMessage('done', { taskId: task.id }) })
  await sender.idle()
  t.equal(receiver.received.length, 0, 'the receiver never heard from the server')
})

t.test('a refusal never tells the caller the internal address a name resolves to', async t => {
  const { dns, url, task } = await setup(t)
  dns.table.set('db.internal', [{ address: '10.1.2.3', family: 4 }])
  const description = 'is refused: db.internal does not resolve to a public address'
  const badRequest = { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'url', description }] }
  const created = await call(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'http://db.internal:5432/hook' })
  t.strictSame(created.error, { code: -32602, message: `Invalid parameters: url ${description}`, data: [badRequest] }, 'JSON-RPC')
  const inline = await call(url, 'SendMessage', {
    message: userMessage('hello'),
    configuration: { taskPushNotificationConfig: { url: 'https://db.internal/hook' } }
  })
  t.strictSame(inline.error, { code: -32602, message: `Invalid parameters: url ${description}`, data: [badRequest] }, 'JSON-RPC, inline')
  const reply = await rest(url, 'POST', `/tasks/${task.id as string}/pushNotificationConfigs`, { body: { url: 'http://db.internal/hook' } })
  t.equal(reply.status, 400)
  t.strictSame(reply.body, { error: { code: 400, status: 'INVALID_ARGUMENT', message: `Invalid parameters: url ${description}`, details: [badRequest] } }, 'REST')
  t.notMatch(JSON.stringify([created, inline, reply.body]), /10\.1\.2\.3/)
})

t.test('a name that does not resolve at creation is accepted; at delivery it resolves inward and is refused', async t => {
  const { receiver, dns, url, task, reports, sender } = await setup(t)
  const webhook = `http://rebind.test:${receiver.port}/hook`
  const created = await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'rebind', url: webhook })
  t.equal(created.url, webhook, 'accepted while it does not resolve')
  dns.table.set('rebind.test', [{ address: '127.0.0.1', family: 4 }])
  await result(url, 'SendMessage', { message: userMessage('go', { taskId: task.id }) })
  await sender.idle()
  t.equal(receiver.received.length, 0, 'nothing reached the receiver')
  t.same(reports.map(r => [r.outcome, r.attempts]), [['refused', 1], ['refused', 1]], 'refused, and not retried')
  t.match(reports[0]?.reason, /127\.0\.0\.1/)
})

t.test('a public name is accepted at creation (and, on a finished task, never called)', async t => {
  const { dns, url, sender } = await setup(t)
  dns.table.set('public.test', [{ address: '93.184.216.34', family: 4 }])
  const done = (await result(url, 'SendMessage', { message: userMessage('hello') })).task
  const created = await result(url, 'CreateTaskPushNotificationConfig', { taskId: done.id, url: 'https://public.test/hook' })
  t.equal(created.url, 'https://public.test/hook')
  await sender.idle()
  t.same(sender.stats, { delivered: 0, failed: 0, refused: 0, dropped: 0 })
})

t.test('the allow-list: an address, a CIDR range, a trusted name, an IPv6 address', async t => {
  for (const [allow, host] of [
    [['127.0.0.1'], '127.0.0.1'],
    [['127.0.0.0/8'], 'hook.test'],
    [['hook.test'], 'hook.test'],
    // A fully qualified name is the same name: trusted at creation, and at delivery too
    [['hook.test'], 'HOOK.test.'],
    [['::1'], '[::1]']
  ] as const) {
    await t.test(`allow ${allow.join(',')}: deliver to ${host}`, async t => {
      const { receiver, dns, url, task, sender } = await setup(t, [...allow])
      dns.table.set('hook.test', [{ address: '127.0.0.1', family: 4 }])
      dns.table.set('hook.test.', [{ address: '127.0.0.1', family: 4 }])
      const target = host === '[::1]' ? await startReceiver(undefined, '::1') : receiver
      if (target !== receiver) t.teardown(() => target.close())
      await result(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: `http://${host}:${target.port}/ok` })
      await result(url, 'SendMessage', { message: userMessage('go', { taskId: task.id }) })
      await sender.idle()
      t.same(target.bodies('/ok').map(body => Object.keys(body)[0]), ['artifactUpdate', 'statusUpdate'])
    })
  }
  await t.test('an allowed address does not open the rest of its network', async t => {
    const { receiver, url, task } = await setup(t, ['127.0.0.2'])
    refusedUrl(t, (await call(url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: `http://127.0.0.1:${receiver.port}/x` })).error, '127.0.0.1')
  })
})

t.test('tokens and credentials must be usable as header values', async t => {
  const { url, task } = await setup(t, ['127.0.0.1'])
  const base = { taskId: task.id, url: 'http://127.0.0.1:9/hook' }
  const field = async (params: Record<string, unknown>) =>
    (await call(url, 'CreateTaskPushNotificationConfig', { ...base, ...params })).error?.data?.[0]?.fieldViolations?.[0]?.field
  t.equal(await field({ token: 'a\r\nX-Injected: 1' }), 'token')
  t.equal(await field({ authentication: { scheme: 'Bearer', credentials: 'x\ny' } }), 'authentication.credentials')
  t.equal(await field({ authentication: { scheme: 'Bear er' } }), 'authentication.scheme')
  t.equal(await field({ token: 'fine', authentication: { scheme: 'Basic', credentials: 'dXNlcjpwYXNz' } }), undefined)
})
