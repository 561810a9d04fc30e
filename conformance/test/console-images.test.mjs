// The console's images page (issue 39) in a real browser: Debian's
// chromium driven headless by puppeteer-core. Its own token-less daemon
// builds two templates from Dockerfiles, one whose rebuild fails; the
// page lists each with its layers and last build (state, steps, cache
// hits) and shows the end of its build log behind a toggle. Every wait is
// for a condition, never for a duration.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startDaemon, BOOT_TIMEOUT_MS } from '../lib.mjs'
import { openPage } from '../browser.mjs'

const WAIT = { timeout: 120_000 }

let daemon, browser, page
const errors = []

// build posts a template build and reads its event stream to the end.
async function build (name, dockerfile) {
  const res = await fetch(daemon.url + '/v1/templates/build', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, dockerfile })
  })
  return res.text()
}

before(async () => {
  daemon = await startDaemon()
  ;({ browser, page } = await openPage(errors))
}, { timeout: BOOT_TIMEOUT_MS })

after(async () => {
  await browser?.close()
  if (daemon) {
    for (const name of ['good', 'web']) await fetch(`${daemon.url}/v1/templates/${name}`, { method: 'DELETE' }).catch(() => {})
    await daemon.stop()
  }
})

test('the images page lists templates with their build, layers and log', { timeout: BOOT_TIMEOUT_MS * 3 }, async () => {
  const ok = await build('good', 'FROM python\nRUN echo good-marker > /good\n')
  assert.match(ok, /"phase":"done"/)
  await build('web', 'FROM python\nRUN echo built-marker > /m\n')
  const failed = await build('web', 'FROM python\nRUN echo built-marker > /m\nRUN echo fail-marker && exit 3\n')
  assert.match(failed, /line 3/)

  await page.goto(`${daemon.url}/ui/#/images`, { waitUntil: 'load' })
  await page.waitForSelector('#templates tr[data-template="web"] td[data-build]', WAIT)
  const rows = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#templates tbody tr')].map((tr) => {
    const cells = [...tr.children]
    return [tr.dataset.template, {
      layers: cells[4].textContent,
      state: tr.querySelector('td[data-build]')?.dataset.build,
      build: cells[5].textContent,
      log: tr.querySelector('details.build-log pre')?.textContent ?? '',
      logShown: tr.querySelector('details.build-log pre')?.checkVisibility() ?? false
    }]
  })))
  assert.equal(rows.good.state, 'succeeded')
  assert.equal(rows.good.layers, '1')
  assert.match(rows.good.build, /1 steps, 0 cached/)
  assert.match(rows.good.log, /line 2: RUN echo good-marker > \/good/)
  assert.equal(rows.good.logShown, false)
  assert.equal(rows.web.state, 'failed')
  assert.match(rows.web.build, /2 steps, 1 cached/)
  assert.match(rows.web.build, /Dockerfile line 3 failed/)
  assert.match(rows.web.log, /line 2: RUN echo built-marker > \/m \(cached\)/)
  assert.match(rows.web.log, /line 3: RUN echo fail-marker && exit 3\n {2}fail-marker/)

  // The log opens on a click and stays open across the page's refresh.
  await page.click('#templates tr[data-template="web"] details.build-log summary')
  await page.waitForFunction(() => document.querySelector('#templates tr[data-template="web"] details.build-log pre')?.checkVisibility(), WAIT)
  assert.deepEqual(errors, [])
})
