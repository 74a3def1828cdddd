// Built-in tenant resolution. A call's tenant comes, first to last, from: the resolver
// option (the server's own policy, e.g. from the identity); the HTTP+JSON path prefix; a
// configured header; the request's `tenant` field. Stores scope every read and write by it.
import type { CallContext } from '../handler/executor.js'
import { REST_BINDING } from '../dispatcher/rest.js'
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

/** Did the call's HTTP+JSON path name its tenant (`/{tenant}/…`)? */
function namedByPath (context: CallContext, call: InterceptedCall): boolean {
  return context.binding === REST_BINDING && (call.request?.params as { tenant?: string } | undefined)?.tenant !== undefined
}

export function tenancy (options: TenancyOptions): A2AInterceptor {
  const header = options.header?.toLowerCase()
  return {
    async before (context, call) {
      // The chain's tenant is the call's: nothing reads the request's own `tenant` field after it.
      const resolved = await options.resolve?.(context, call)
      if (resolved !== undefined) {
        context.tenant = resolved
        return
      }
      const fromHeader = header === undefined ? undefined : context.serviceParams[header]
      // `context.tenant` holds the path's or the request field's: the header goes over the field only.
      if (fromHeader !== undefined && fromHeader !== '' && !namedByPath(context, call)) context.tenant = fromHeader
    }
  }
}
