// The browser demo (examples/browser/, served by the example server at /demo) clicked
// through in headless Chromium: the page connects over WebSocket with fastify-a2a/client,
// sends a message, streams 50 chunks, cancels a held task, asks for input, and shows
// errors. Also: the client in a real browser (version in the query string, what a refused
// upgrade looks like), and how the demo serves the client, from source and compiled.
import { readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { buildConformanceServer } from '../examples/conformance-agent.js'
import { chromiumMissing, launchChromium } from './helpers/browser.js'
import { startAgentProcess } from './helpers/agent-process.js'
import { AGENT_BUILD } from './helpers/build-agent.js'

const agent = await buildConformanceServer({})
await agent.listen({ host: '127.0.0.1', port: 0 })
t.teardown(() => agent.close())
const origin = `http://127.0.0.1:${(agent.server.address() as { port: number }).port}`

t.test('run as TypeScript, the demo serves lib/client transpiled on the fly', async t => {
  const index = await fetch(`${origin}/demo/client/index.js`)
  t.equal(index.headers.get('content-type'), 'text/javascript; charset=utf-8')
  const code = await index.text()
  t.match(code, "export { A2AClient } from './client.js';")
  t.notMatch(code, /export type|import type/)
  t.match(await (await fetch(`${origin}/demo/client/transports/websocket.js`)).text(), 'export class WebSocketTransport')
  for (const path of ['nope.js', '..%2Fplugin.js', 'Index.js', 'index.ts']) {
    t.equal((await fetch(`${origin}/demo/client/${path}`)).status, 404, path)
  }
  t.match(await (await fetch(`${origin}/demo`)).text(), '<title>A2A client demo · fastify-a2a</title>')
})

t.test('the client\'s module graph, as a browser loads it from /demo/client/index.js, stays in its folder', async t => {
  const base = `${origin}/demo/client/`
  const seen = new Set<string>()
  const pending = [new URL('index.js', base).href]
  for (let url = pending.pop(); url !== undefined; url = pending.pop()) {
    if (seen.has(url)) continue
    seen.add(url)
    t.ok(url.startsWith(base), `${url.slice(origin.length)} is in the client's folder`)
    const response = await fetch(url)
    t.equal(response.status, 200, url.slice(origin.length))
    for (const [, specifier] of (await response.text()).matchAll(/(?:import|export)\s[^'";]*?from\s*'([^']+)'/g)) {
      t.ok(specifier?.startsWith('.'), `${url.slice(origin.length)} imports ${specifier ?? ''}: a path of its own`)
      pending.push(new URL(specifier as string, url).href)
    }
  }
  t.ok(seen.size > 10, `${seen.size} modules`)
})

t.test('compiled, as `npm start` runs it, the demo serves the compiled client', async t => {
  const compiled = await startAgentProcess()
  t.teardown(() => { compiled.child.kill('SIGKILL') })
  const served = await (await fetch(`${compiled.origin}/demo/client/transports/websocket.js`)).text()
  t.equal(served, await readFile(join(AGENT_BUILD, 'lib/client/transports/websocket.js'), 'utf8'))
  t.equal((await fetch(`${compiled.origin}/demo/app.js`)).status, 200)
})

const missing = chromiumMissing()

t.test('the demo in Chromium', { skip: missing }, async t => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const { page } = browser
  const pageErrors: string[] = []
  page.on('pageerror', error => pageErrors.push(error.message))
  const text = (selector: string) => page.locator(selector).textContent()
  const stateIs = (state: string) => page.waitForFunction(expected => document.querySelector('#task-state')?.textContent === expected, state)

  await page.goto(`${origin}/demo`)
  await page.waitForSelector('#connection.pill-ok')
  t.equal(await text('#connection'), `Connected · WebSocket · ${origin.replace('http', 'ws')}`)

  t.test('send a message', async t => {
    await page.fill('#message', 'hello from the browser')
    await page.click('#send')
    await stateIs('completed')
    t.equal(await text('[data-artifact-id="echo"] pre'), 'hello from the browser')
    t.same(await page.locator('#events li').allTextContents(), [
      'task submitted', 'statusUpdate working', 'artifactUpdate echo: hello from the browser', 'statusUpdate completed'
    ])
  })

  t.test('stream 50: every chunk arrives as its own event, in order', async t => {
    await page.click('[data-command="stream 50"]')
    await page.waitForFunction(() => document.querySelector('#chunk-count')?.textContent === '50' && document.querySelector('#task-state')?.textContent === 'completed')
    const chunks = Array.from({ length: 50 }, (_, i) => `chunk ${i + 1}`)
    t.equal(await text('[data-artifact-id="stream"] pre'), chunks.join('\n'))
    t.same(await page.locator('#events li[data-kind="artifactUpdate"]').allTextContents(), chunks.map(chunk => `artifactUpdate stream: ${chunk}`))
    t.equal(await text('#event-count'), '53')
    t.equal(await page.locator('#cancel').isDisabled(), true, 'nothing to cancel')
    const screenshot = await page.screenshot()
    await writeFile(join(tmpdir(), 'a2a-browser-demo.png'), screenshot)
    // The README's picture: refreshed on request only, so a test run leaves the tree alone.
    if (process.env.UPDATE_SCREENSHOT === '1') await writeFile(new URL('../examples/browser/screenshot.png', import.meta.url), screenshot)
    t.ok(screenshot.length > 10_000)
  })

  t.test('cancel a held task', async t => {
    await page.click('[data-command="hold"]')
    await stateIs('working')
    await page.waitForSelector('#cancel:not([disabled])')
    const taskId = await text('#task-id')
    await page.click('#cancel')
    await stateIs('canceled')
    await page.waitForSelector('#events li:has-text("statusUpdate canceled")')
    t.equal(await text('#task-id'), taskId)
    t.equal(await page.locator('#cancel').isDisabled(), true)
    t.equal(await page.locator('#error').isHidden(), true)
  })

  t.test('a task that asks for input takes the next message', async t => {
    await page.click('[data-command="input"]')
    await stateIs('input-required')
    t.equal(await text('#status-message'), 'need input')
    const taskId = await text('#task-id')
    await page.fill('#message', 'here you are')
    await page.click('#send')
    await stateIs('completed')
    t.equal(await text('#task-id'), taskId)
    t.equal(await text('[data-artifact-id="echo"] pre'), 'here you are')
  })

  t.test('a reply without a task, and a task that fails', async t => {
    await page.click('[data-command="message hello"]')
    await page.waitForSelector('#reply:not([hidden])')
    t.equal(await text('#reply'), 'hello')
    t.equal(await text('#task-state'), 'idle')
    await page.click('[data-command="fail"]')
    await stateIs('failed')
    t.equal(await text('#status-message'), 'failed on purpose')
  })

  t.test('an error, shown readably', async t => {
    await page.click('#missing')
    await page.waitForSelector('#error:not([hidden])')
    t.equal(await text('#error .error-title'), 'TASK_NOT_FOUND · -32001')
    t.equal(await text('#error .error-message'), 'Task not found: no-such-task')
    t.same(await page.locator('#error .error-details > *').allTextContents(), ['code', '-32001', 'domain', 'a2a-protocol.org', 'taskId', 'no-such-task'])
  })

  t.test('no script error on the way', async t => {
    t.same(pageErrors, [])
  })
})

t.test('the client in Chromium: the version in the query string; a refused upgrade; headers refused', { skip: missing }, async t => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  await browser.page.goto(`${origin}/demo`)
  const seen = await browser.page.evaluate(async (wsUrl) => {
    const client = await import('/demo/client/index.js' as string)
    const a2a = await client.createClient(location.origin)
    const answer = await a2a.sendMessage({ message: { messageId: 'b1', role: 'ROLE_USER', parts: [{ text: 'params' }] } })
    await a2a.close()
    const refused = await new client.WebSocketTransport({ url: wsUrl, serviceParams: { 'A2A-Version': '0.3' } }).connect().catch((error: any) => error)
    let headers: any
    try {
      new client.WebSocketTransport({ url: wsUrl, serviceParams: { Authorization: 'Bearer t' } })
    } catch (error) {
      headers = error
    }
    return {
      transport: a2a.transport.constructor.name,
      params: answer.task.artifacts[0].parts[0].data,
      refused: { isConnectionError: refused instanceof client.ConnectionError, name: refused.name, closeCode: refused.closeCode, retryable: refused.retryable },
      headers: { name: headers?.name, message: headers?.message }
    }
  }, origin.replace('http', 'ws'))
  t.equal(seen.transport, 'WebSocketTransport')
  t.match(seen.params, { 'a2a-version': '1.0', origin, ':path': '/' })
  t.equal(seen.params.authorization, undefined)
  t.same(seen.refused, { isConnectionError: true, name: 'ConnectionError', closeCode: 1006, retryable: true })
  t.same(seen.headers, {
    name: 'TypeError',
    message: 'a browser cannot send Authorization on a WebSocket upgrade: authenticate through a gateway that turns a cookie into a header'
  })
})
