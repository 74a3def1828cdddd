// A task's topic: the name its events are published under, and the key of every table kept
// per task while it changes (the handler's runs and followers, the push sender's lookups, a
// cluster member's leases, the buses' listeners). One per tenant and task id.
//
// The default tenant's topic is the task id itself, the very string: it is already hashed
// (it keys the task store), where a joined string would be made, flattened and hashed again
// on every call, and looked up as a cons string in each of those tables (0.3–0.5 µs of the
// handler's 7.8 per SendMessage in one process; with the symbol keys lib/copy.ts no longer
// asks for, about 1 % of an HTTP SendMessage's server CPU: bench/HISTORY.md, forty-seventh
// round). Every other topic starts with the tenant's length and a NUL: it holds a NUL and the
// id form holds none, and the length says where the tenant ends, whatever characters tenant
// and id hold. No two pairs share a topic.

/** The topic of task `taskId` of `tenant` ('' is the default tenant). */
export function topicOf (tenant: string, taskId: string): string {
  return tenant === '' && !taskId.includes('\u0000') ? taskId : `${tenant.length}\u0000${tenant}${taskId}`
}
