// Built-in tenant resolution. A call's tenant comes, first to last, from: the resolver
// option (the server's own policy, e.g. from the identity); the HTTP+JSON path prefix; a
// configured header; the request's `tenant` field. Stores scope every read and write by it.
import type { CallContext } from '../handler/executor.js'
import type { A2AInterceptor, InterceptedCall } from './types.js'

export interface TenancyOptions {
  /** A header naming the tenant, e.g. `x-tenant`. */
  header?: string
  /**
   * The tenant of a call, final (`''` pins the default tenant): the path, header and request
   * cannot name another. Undefined leaves it to them.
   */
  resolve?: (context: CallContext, call: InterceptedCall) => string | undefined | Promise<string | undefined>
}

export function tenancy (options: TenancyOptions): A2AInterceptor {
  const header = options.header?.toLowerCase()
  return {
    async before (context, call) {
      const resolved = await options.resolve?.(context, call)
      if (resolved !== undefined) {
        context.tenant = resolved
        // The request's own `tenant` field, read after the chain, must not name another.
        const { params } = call
        if (typeof params === 'object' && params !== null && 'tenant' in params) call.params = { ...params, tenant: resolved }
        return
      }
      const fromHeader = header === undefined ? undefined : context.serviceParams[header]
      if (context.tenant === '' && fromHeader !== undefined && fromHeader !== '') context.tenant = fromHeader
    }
  }
}
