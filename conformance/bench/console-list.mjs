// Benchmark scenario (not a test; run by `make bench-console`): how long
// the console's sandboxes page takes to show N live sandboxes (default 100)
// in headless chromium, from navigation to the last row, over RUNS fresh
// loads. The goal is under 1 s for 100 sandboxes. It starts a daemon of
// its own (no api_tokens), creates the sandboxes through the REST API,
// measures, prints one JSON line, and stops everything it started.
import puppeteer from 'puppeteer-core'
import { startDaemon } from '../lib.mjs'

const N = Number(process.env.N ?? 100)
const RUNS = Number(process.env.RUNS ?? 5)
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'

const daemon = await startDaemon('', { maxSandboxes: N + 4 })
let browser
try {
  const call = async (method, path, body) => {
    const res = await fetch(daemon.url + path, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }
  // Eight creates at a time: the host's boot slots queue the rest anyway.
  let made = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (made < N) {
      made++
      await call('POST', '/v1/sandboxes', { image: 'python', metadata: { bench: 'console-list' } })
    }
  }))
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
  const runs = []
  for (let i = 0; i < RUNS; i++) {
    const page = await browser.newPage()
    await page.goto(`${daemon.url}/ui/#/sandboxes`, { waitUntil: 'domcontentloaded' })
    // performance.now() counts from the navigation's start.
    const handle = await page.waitForFunction((n) => document.querySelectorAll('#sandboxes tbody tr').length >= n && performance.now(),
      { timeout: 120_000, polling: 'mutation' }, N)
    runs.push(Math.round(await handle.jsonValue()))
    await page.close()
  }
  const sorted = [...runs].sort((a, b) => a - b)
  console.log(JSON.stringify({ scenario: 'console_list', sandboxes: N, runs_ms: runs, p50_ms: sorted[Math.floor(sorted.length / 2)], max_ms: sorted.at(-1), goal_ms: 1000 }))
} finally {
  await browser?.close()
  const { sandboxes } = await (await fetch(`${daemon.url}/v1/sandboxes`)).json()
  await Promise.all(sandboxes.filter((s) => !s.stopped).map((s) => fetch(`${daemon.url}/v1/sandboxes/${s.sandbox_id}?wait=true`, { method: 'DELETE' })))
  await daemon.stop()
}
