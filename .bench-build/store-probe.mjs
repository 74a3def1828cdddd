import { MemoryTaskStore } from './lib/store/memory.js'
const store = new MemoryTaskStore()
const scope = { tenant: '' }
const N = 60000
const c0 = process.cpuUsage()
for (let i = 0; i < N; i++) {
  const id = 't' + i
  await store.create({ id, contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED', timestamp: new Date().toISOString() } }, scope)
  await store.update(id, { kind: 'status', status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() } }, scope)
}
const c = process.cpuUsage(c0)
console.log(((c.user + c.system) / N).toFixed(2), 'µs per task (create+complete)', store.size)
