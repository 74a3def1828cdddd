// Headless Chromium for the browser tests: Debian's `chromium` package driven by
// playwright-core (no browser download can work here; .ci/run installs the package),
// each launch with a fresh profile directory removed on close.
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
]

/** Why the browser tests cannot run here, or undefined. Under CI a missing browser is a failure, not a skip. */
export function chromiumMissing (): string | undefined {
  if (existsSync(CHROMIUM)) return undefined
  if (process.env.CI !== undefined && process.env.CI !== '') throw new Error(`${CHROMIUM} is missing: .ci/run installs the chromium package`)
  return `${CHROMIUM} is missing (apt-get install -y chromium)`
}

export interface Browser {
  page: Page
  context: BrowserContext
  close (): Promise<void>
}

export async function launchChromium (): Promise<Browser> {
  // playwright-core passes the profile directory as --user-data-dir itself.
  const profile = await mkdtemp(join(tmpdir(), 'a2a-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: FLAGS,
    viewport: { width: 1360, height: 860 }
  })
  const page = context.pages()[0] ?? await context.newPage()
  return {
    page,
    context,
    async close () {
      await context.close()
      await rm(profile, { recursive: true, force: true })
    }
  }
}
