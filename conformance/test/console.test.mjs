// The web console (/ui/, internal/console) in a real browser: Debian's
// chromium driven headless by puppeteer-core (nothing downloads a browser).
// The test runs its own daemon with api_tokens for two owners, so the
// suite's token-less daemon keeps its one-user mode. Every wait is for a
// condition, never for a duration. HUTCH_KEEP_WORK=1 keeps the screenshots
// of every page; HUTCH_CONSOLE_SCREENSHOT=path copies the sandboxes page
// there (docs/console.png is one).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startDaemon, BOOT_TIMEOUT_MS } from '../lib.mjs'
import { openPage } from '../browser.mjs'

const WAIT = { timeout: 120_000 }
const aliceToken = 'alice-' + Math.random().toString(36).slice(2).padEnd(20, '0')
const bobToken = 'bob-' + Math.random().toString(36).slice(2).padEnd(20, '0')
const marker = '<img src=x onerror=alert(1)>'

let daemon, browser, page, work, bobSandbox
const errors = []
// dialogs are the dialogs no test expected; answers, the answers a test
// gives the next ones it expects (true accepts), and asked their messages.
const dialogs = []
const answers = []
const asked = []

// call is the REST API as one owner.
async function call (tok, method, path, body) {
  const res = await fetch(daemon.url + path, {
    method,
    headers: { authorization: `Bearer ${tok}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined
  })
  const json = await res.json()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

// until polls cond (a check of this process's state) until it holds,
// failing after WAIT.
async function until (cond, what) {
  for (const deadline = Date.now() + WAIT.timeout; !cond();) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function shot (name) {
  await page.screenshot({ path: join(work, `${name}.png`) })
}

// noBobHere checks that the other owner's sandbox appears nowhere on the page.
async function noBobHere () {
  const text = await page.evaluate(() => document.body.innerText)
  assert.ok(!text.includes(bobSandbox), `bob's sandbox ${bobSandbox} appeared on ${await page.evaluate(() => location.hash)}`)
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'hutch-console-test-'))
  daemon = await startDaemon(`api_tokens:\n  alice: ${aliceToken}\n  bob: ${bobToken}`)
  bobSandbox = (await call(bobToken, 'POST', '/v1/sandboxes', { image: 'python' })).sandbox_id
  ;({ browser, page } = await openPage(errors))
  page.on('dialog', async (d) => {
    if (!answers.length) {
      dialogs.push(d.message())
      return d.dismiss()
    }
    asked.push(d.message())
    return answers.shift() ? d.accept() : d.dismiss()
  })
}, { timeout: BOOT_TIMEOUT_MS })

after(async () => {
  await browser?.close()
  if (daemon) {
    for (const tok of [aliceToken, bobToken]) {
      const { sandboxes } = await call(tok, 'GET', '/v1/sandboxes').catch(() => ({ sandboxes: [] }))
      await Promise.all(sandboxes.filter((s) => !s.stopped)
        .map((s) => call(tok, 'DELETE', `/v1/sandboxes/${s.sandbox_id}?wait=true`).catch(() => {})))
    }
    await daemon.stop()
  }
  if (work && process.env.HUTCH_KEEP_WORK !== '1') rmSync(work, { recursive: true, force: true })
  else if (work) console.log(`console screenshots: ${work}`)
})

test('the console, driven in a browser as one of two owners', { timeout: BOOT_TIMEOUT_MS * 2 }, async (t) => {
  let id

  await t.test('is served with a strict CSP and asks for a token', async () => {
    const res = await page.goto(`${daemon.url}/ui/`, { waitUntil: 'load' })
    assert.equal(res.status(), 200)
    const csp = res.headers()['content-security-policy']
    assert.match(csp, /default-src 'self'/)
    assert.match(csp, /frame-ancestors 'none'/)
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
    assert.equal(res.headers()['x-content-type-options'], 'nosniff')
    await page.waitForSelector('#token', WAIT)
    await shot('login')
  })

  await t.test('signs in with a token and lists only its owner\'s sandboxes', async () => {
    await page.type('#token', aliceToken)
    await page.click('form.login button[type=submit]')
    await page.waitForSelector('#sandboxes', WAIT)
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('hutch.token'), cookie: document.cookie }))
    assert.equal(stored.session, aliceToken)
    assert.equal(stored.cookie, '')
    await page.waitForFunction(() => document.querySelector('select[name=image] option[value=python]'), WAIT)
    await noBobHere()
  })

  await t.test('creates a python sandbox', async () => {
    await page.select('select[name=image]', 'python')
    await page.click('#create')
    await page.waitForFunction(() => location.hash.startsWith('#/sandbox/'), { timeout: BOOT_TIMEOUT_MS })
    id = await page.evaluate(() => location.hash.slice('#/sandbox/'.length))
    await page.waitForFunction(() => document.querySelector('#sandbox-state [data-state]')?.dataset.state === 'running', WAIT)
    await page.waitForFunction(() => document.querySelectorAll('svg.chart polyline').length === 2, WAIT)
    await shot('sandbox')
  })

  await t.test('runs python in its terminal', async () => {
    await page.click('button[data-tab=terminal]')
    await page.waitForFunction(() => document.getElementById('terminal-status')?.textContent === 'connected', WAIT)
    await page.click('#terminal')
    await page.keyboard.type("python3 -c 'print(6*7)'\n")
    await page.waitForFunction(() => [...document.querySelectorAll('.xterm-rows > div')].some((r) => r.textContent.trim() === '42'), WAIT)
    await shot('terminal')
  })

  await t.test('uploads a file and sees it in the file browser', async () => {
    await page.click('button[data-tab=files]')
    await page.waitForSelector('#files tbody tr', WAIT)
    const local = join(work, 'hello-console.txt')
    writeFileSync(local, 'hello from the console test\n')
    const input = await page.$('input[name=upload]')
    await input.uploadFile(local)
    await page.waitForSelector('#files tr[data-file="hello-console.txt"]', WAIT)
    const got = await call(aliceToken, 'POST', `/v1/sandboxes/${id}/fs/read`, { path: '/tmp/hello-console.txt' })
    assert.match(JSON.stringify(got), /hello from the console test/)
    await shot('files')
  })

  await t.test('edits a small text file', async () => {
    await page.click('#files tr[data-file="hello-console.txt"] button[data-action=edit]')
    await page.waitForFunction(() => document.querySelector('textarea[name=editor]')?.value.includes('hello from the console test'), WAIT)
    await page.$eval('textarea[name=editor]', (el) => { el.value = 'edited in the console\n' })
    await page.click('#save')
    await page.waitForFunction(() => [...document.querySelectorAll('#flash .msg')].some((m) => m.textContent.startsWith('saved ')), WAIT)
    const got = await call(aliceToken, 'POST', `/v1/sandboxes/${id}/fs/read`, { path: '/tmp/hello-console.txt' })
    assert.match(JSON.stringify(got), /edited in the console/)
  })

  await t.test('exposes a port and links its preview', async () => {
    await page.click('button[data-tab=ports]')
    await page.type('input[name=port]', '8000')
    await page.click('input[name=public]')
    await page.click('#expose')
    await page.waitForFunction((u) => [...document.querySelectorAll('#ports a')].some((a) => a.href.startsWith(`${u}/p/`) && a.target === '_blank'), WAIT, daemon.url)
  })

  await t.test('shows what a process prints as text, never as markup', async () => {
    await page.click('button[data-tab=processes]')
    await page.type('input[name=command]', `echo '${marker}'`)
    await page.click('#run')
    await page.waitForFunction((m) => [...document.querySelectorAll('pre.output')].some((p) => p.textContent.includes(m)), WAIT, marker)
    assert.equal(await page.$$eval('#outputs img', (imgs) => imgs.length), 0)
    assert.equal(await page.$$eval('img', (imgs) => imgs.length), 0)
    await shot('processes')
  })

  await t.test('sees the sandbox stop through its events, without a reload', async () => {
    await page.click('button[data-tab=overview]')
    await page.evaluate(() => { window.notReloaded = true })
    await call(aliceToken, 'DELETE', `/v1/sandboxes/${id}`)
    await page.waitForFunction(() => document.querySelector('#sandbox-state [data-state]')?.dataset.state === 'stopped', WAIT)
    assert.equal(await page.evaluate(() => window.notReloaded), true)
    await page.click('button[data-tab=events]')
    await page.waitForFunction(() => document.querySelector('#sandbox-events')?.textContent.includes('sandbox.stopped'), WAIT)
  })

  await t.test('stops a sandbox from the list and sees its state change', async () => {
    const other = (await call(aliceToken, 'POST', '/v1/sandboxes', { image: 'python' })).sandbox_id
    await page.evaluate(() => { location.hash = '#/sandboxes' })
    await page.waitForSelector(`tr[data-sandbox="${other}"] button[data-action=stop]`, WAIT)
    await page.waitForSelector(`tr[data-sandbox="${other}"] [data-memory]`, WAIT)
    await shot('sandboxes')
    if (process.env.HUTCH_CONSOLE_SCREENSHOT) copyFileSync(join(work, 'sandboxes.png'), process.env.HUTCH_CONSOLE_SCREENSHOT)
    await page.evaluate(() => { window.notReloaded = true })
    // Stop asks first, as removing does: declined, nothing happens.
    const stopButton = `tr[data-sandbox="${other}"] button[data-action=stop]`
    answers.push(false)
    await page.click(stopButton)
    await until(() => asked.length === 1, 'the stop button to ask')
    assert.match(asked[0], new RegExp(`^Stop sandbox ${other}\\?`))
    await page.waitForFunction((sel) => !document.querySelector(sel)?.disabled, WAIT, stopButton)
    assert.equal((await call(aliceToken, 'GET', `/v1/sandboxes/${other}`)).state, 'running')
    answers.push(true)
    await page.click(stopButton)
    await until(() => asked.length === 2, 'the stop button to ask again')
    await page.waitForFunction((o) => document.querySelector(`tr[data-sandbox="${o}"] [data-state]`)?.dataset.state === 'stopped', WAIT, other)
    assert.equal(await page.evaluate(() => window.notReloaded), true)
    await noBobHere()
    await shot('sandboxes-stopped')
  })

  await t.test('shows images, events and the daemon', async () => {
    for (const [hash, sel] of [['#/images', '#images tbody tr'], ['#/events', '#events tbody tr'], ['#/daemon', '#metrics tbody tr']]) {
      await page.evaluate((h) => { location.hash = h }, hash)
      await page.waitForSelector(sel, WAIT)
      await noBobHere()
      await shot(hash.slice(2))
    }
    // The daemon page names the runtime and the capacity.
    await page.waitForFunction(() => {
      const text = document.querySelector('#daemon-summary')?.textContent ?? ''
      return text.includes('Runtime gvisor(systrap, default)') && text.includes('Sandbox capacity')
    }, WAIT)
    // issue 38: 6: it shows the caller's use against each quota limit,
    // as GET /v1/quota gives it.
    const { items } = await call(aliceToken, 'GET', '/v1/quota')
    const sandboxes = items.find((it) => it.name === 'sandboxes')
    await page.waitForFunction((n, used) => {
      const rows = document.querySelectorAll('#quota tbody tr')
      const row = document.querySelector('#quota tr[data-limit="sandboxes"]')
      return rows.length === n && row?.children[1]?.textContent === String(used) && row.textContent.includes('quota.default.sandboxes')
    }, WAIT, items.length, sandboxes.used)
  })

  await t.test('says so for a sandbox id it does not know, or another owner\'s', async () => {
    // The browser logs each refused call (400 for what is no id, 404 for
    // an unknown one) as an error of its own: those are expected here.
    const before = errors.length
    for (const unknown of ['sb-doesnotexist', crypto.randomUUID(), bobSandbox]) {
      await page.evaluate((u) => { location.hash = `#/sandbox/${u}` }, unknown)
      await page.waitForFunction((u) => {
        const el = document.querySelector('#sandbox-missing')
        return el?.querySelector('h1')?.textContent === 'No such sandbox' && el.textContent.includes(u)
      }, WAIT, unknown)
      assert.equal(await page.$('#sandbox-state'), null)
    }
    errors.push(...errors.splice(before).filter((e) => !/Failed to load resource: the server responded with a status of 40[04]/.test(e)))
    await shot('sandbox-missing')
  })

  await t.test('shows the daemon\'s metric values within a 1280 px window', async () => {
    await page.evaluate(() => { location.hash = '#/daemon' })
    await page.waitForSelector('#metrics tbody tr td.num', WAIT)
    const hidden = await page.evaluate(() => {
      const width = document.documentElement.clientWidth
      return [...document.querySelectorAll('#metrics tbody td.num, #daemon-summary dd')].filter((el) => {
        const r = el.getBoundingClientRect()
        return r.width === 0 || r.left < 0 || r.right > width || el.scrollWidth > el.clientWidth
      }).map((el) => `${(el.tagName === 'DD' ? el.previousElementSibling : el.parentElement.firstElementChild).textContent}: ${el.textContent}`)
    })
    assert.equal(await page.evaluate(() => window.innerWidth), 1280)
    assert.deepEqual(hidden, [])
    await shot('daemon-1280')
  })

  await t.test('logged no errors and opened no dialog', () => {
    assert.deepEqual(errors, [])
    assert.deepEqual(dialogs, [])
  })
})
