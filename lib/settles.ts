// A wait with a bound, for what may never end (a statement on a connection that went silent).

/**
 * Whether `promise` settles, resolved or rejected, within `ms` (0: as long as it takes). Its
 * outcome is not otherwise read: the caller awaits `promise` itself when it settled in time.
 */
export async function settlesWithin (promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(() => true, () => true)
  if (ms === 0) return await settled
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>(resolve => { timer = setTimeout(resolve, ms, false) })
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
}
