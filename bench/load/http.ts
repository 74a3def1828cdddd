// HTTP load: autocannon against one endpoint, the same request body on every call.
import autocannon from 'autocannon'

export interface HttpLoad {
  url: string
  body: string
  headers: Record<string, string>
  connections: number
  durationSec: number
}

export interface HttpFigure {
  requestsPerSec: number
  p99Ms: number
  total: number
}

export async function measureHttp (load: HttpLoad): Promise<HttpFigure> {
  const result = await autocannon({
    url: load.url,
    method: 'POST',
    body: load.body,
    headers: load.headers,
    connections: load.connections,
    duration: load.durationSec,
    // A stalled server fails the run instead of hanging it.
    timeout: 10
  })
  const failed = result.errors + result.timeouts + result.non2xx
  if (failed > 0) throw new Error(`${load.url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx responses`)
  return { requestsPerSec: result.requests.average, p99Ms: result.latency.p99, total: result.requests.total }
}

/** One request outside the load, so a wrong answer (which may still be a 200) fails the bench. */
export async function checkAnswer (url: string, body: string, headers: Record<string, string>, expect: (text: string) => boolean): Promise<void> {
  const response = await fetch(url, { method: 'POST', body, headers, signal: AbortSignal.timeout(10_000) })
  const text = await response.text()
  if (!response.ok || !expect(text)) throw new Error(`${url}: unexpected answer ${response.status} ${text.slice(0, 300)}`)
}
