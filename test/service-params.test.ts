// Service parameters from HTTP headers: one parameter read alone gives what the full set
// holds, and an HTTP call's context makes the full set only when it is read.
import t from 'tap'
import type { FastifyRequest } from 'fastify'
import { HttpCallContext, httpRequestedVersion } from '../lib/dispatcher/call.js'
import { requestedExtensions, requestedVersion, serviceParamFromHeaders, serviceParamsFromHeaders } from '../lib/service-params.js'

const RAW = [
  'Host', '127.0.0.1:3000',
  'A2A-Version', '1.0',
  'a2a-extensions', 'urn:a, urn:b',
  'X-Custom', 'one',
  'x-custom', 'two',
  'Cookie', 'a=1',
  'cookie', 'b=2',
  'X-Binary', 'caf\u00e9',
  'X-Mixed', 'kept',
  'x-mixed', 'dropp\u00e9d',
  'x-mixed', 'also kept',
  // As long as `x-custom`, and another name: told apart by its letters.
  'x-custon', 'other'
]

t.test('serviceParamFromHeaders gives what serviceParamsFromHeaders holds under that name', async t => {
  const all = serviceParamsFromHeaders(RAW)
  for (const name of ['host', 'a2a-version', 'a2a-extensions', 'x-custom', 'cookie', 'x-binary', 'x-mixed', 'x-custon', 'absent']) {
    t.equal(serviceParamFromHeaders(RAW, name), all[name], name)
  }
  t.equal(serviceParamFromHeaders(RAW, 'x-custom'), 'one, two', 'lines joined in order')
  t.equal(serviceParamFromHeaders(RAW, 'cookie'), 'a=1; b=2', 'cookies joined with "; "')
  t.equal(serviceParamFromHeaders(RAW, 'x-binary'), undefined, 'a value that is not visible ASCII is left out')
  t.equal(serviceParamFromHeaders(RAW, 'x-mixed'), 'kept, also kept', 'only that line is left out')
})

t.test('requestedVersion: the header wins over the query; blank is absent', async t => {
  t.equal(requestedVersion(' 1.0 ', { 'A2A-Version': '0.3' }), '1.0')
  t.equal(requestedVersion(undefined, { 'A2A-Version': ' 1.0.1 ' }), '1.0.1')
  t.equal(requestedVersion('  ', { 'A2A-Version': ['1.0', '0.3'] }), '1.0', 'the first of a repeated query parameter')
  t.equal(requestedVersion(undefined, undefined), undefined)
  t.equal(requestedVersion(undefined, { 'A2A-Version': '' }), undefined)
})

t.test('requestedExtensions: a comma-separated list, blanks dropped', async t => {
  t.same(requestedExtensions(' urn:a ,, urn:b,'), ['urn:a', 'urn:b'])
  t.same(requestedExtensions(undefined), [])
})

/** A request as far as a call context reads it. */
function requestOf (rawHeaders: string[], url: string, query: unknown = {}): FastifyRequest {
  return { raw: { rawHeaders }, url, query } as unknown as FastifyRequest
}

t.test('an HTTP call context makes its service parameters when they are first read, then keeps them', async t => {
  const rawHeaders = [...RAW]
  const context = new HttpCallContext('HTTP+JSON', 'SendMessage', requestOf(rawHeaders, '/tenant-a/message:send?x=1'))
  t.same(context.extensions, ['urn:a', 'urn:b'], 'the extensions, from their header alone')
  t.equal(context.binding, 'HTTP+JSON')
  t.equal(context.method, 'SendMessage')
  t.equal(context.tenant, '', 'the runner reads the tenant from the params')
  t.equal(context.identity, undefined)

  // A line added after the context was made shows: the parameters are made on the first read.
  rawHeaders.push('X-Late', 'late')
  const params = context.serviceParams
  t.same({ ...params }, { ...serviceParamsFromHeaders(rawHeaders), ':path': '/tenant-a/message:send' }, 'every header, and the path without its query')
  t.equal(params['x-late'], 'late')
  t.equal(Object.getPrototypeOf(params), null)

  rawHeaders.push('X-Later', 'later')
  t.equal(context.serviceParams, params, 'the same object on the next read, not made again')
  t.equal(params['x-later'], undefined)

  const replaced = { ':path': '/' }
  context.serviceParams = replaced
  t.equal(context.serviceParams, replaced, 'an interceptor may replace them')
})

t.test('httpRequestedVersion: the A2A-Version header, else the query parameter', async t => {
  t.equal(httpRequestedVersion(requestOf(RAW, '/')), '1.0')
  t.equal(httpRequestedVersion(requestOf(['Host', 'h'], '/', { 'A2A-Version': '1.0.1' })), '1.0.1')
  t.equal(httpRequestedVersion(requestOf(['A2A-Version', '1.0', 'a2a-version', '1.0'], '/')), '1.0, 1.0', 'two lines are one joined value, as before')
  t.equal(httpRequestedVersion(requestOf(['A2A-Version', '1.\u00e9'], '/', { 'A2A-Version': '1.0' })), '1.0', 'a header that is not visible ASCII is absent')
  t.equal(httpRequestedVersion(requestOf([], '/')), undefined)
})
