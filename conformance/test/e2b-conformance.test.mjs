// E2B's behaviour where the stock `e2b` SDK's own tests look (issue 43):
// unknown ids are not found, errors in E2B's {code, message} shape, one
// working directory for commands and files, files as envd handles them,
// listing as E2B lists. run.sh points the SDK at the daemon. Nothing here
// waits for a duration: each step waits for what the one before produced.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { NotFoundError, Sandbox, TimeoutError } from 'e2b'
import { BOOT_TIMEOUT_MS } from '../lib.mjs'

const API = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const run = randomUUID()
const opts = { timeout: BOOT_TIMEOUT_MS }

let sbx
before(async () => { sbx = await Sandbox.create('base', { metadata: { run, role: 'shared' }, timeoutMs: 600_000 }) }, opts)
after(async () => { await sbx?.kill() })

// api calls E2B's control plane with the test's key and answers the
// status and the decoded body.
async function api (method, path) {
  const res = await fetch(API + path, { method, headers: { 'X-API-KEY': KEY } })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

describe('E2B ids and errors', () => {
  test('an id hutch does not hold is not found, in E2B shape (2)', async () => {
    assert.equal(await Sandbox.kill('nonexistingsandbox'), false)
    await assert.rejects(Sandbox.getInfo('nonexistingsandbox'), NotFoundError)
    await assert.rejects(Sandbox.connect('nonexistingsandbox'), NotFoundError)
    for (const [method, path] of [['DELETE', '/sandboxes/nonexisting'], ['GET', '/sandboxes/nonexisting'],
      ['POST', '/sandboxes/nonexisting/pause'], ['POST', '/v2/sandboxes/nonexisting/connect'],
      ['GET', `/sandboxes/${randomUUID()}`]]) {
      const { status, body } = await api(method, path)
      assert.equal(status, 404, `${method} ${path}`)
      assert.equal(body.code, 404)
      assert.equal(typeof body.message, 'string')
    }
  })

  test('a route hutch lacks answers E2B errors, not its own envelope (7)', async () => {
    const { status, body } = await api('GET', `/sandboxes/${sbx.sandboxId}/no-such-route`)
    assert.equal(status, 404)
    assert.equal(body.code, 404)
    assert.match(body.message, /no-such-route/)
  })

  test('a sandbox killed during commands.run ends the stream as killed (7)', opts, async () => {
    const victim = await Sandbox.create('base', { metadata: { run, role: 'victim' } })
    const cmd = await victim.commands.run('sleep 600', { background: true })
    await victim.kill()
    const err = await cmd.wait().catch((e) => e)
    assert.ok(err instanceof TimeoutError, `${err}`)
    assert.match(err.message, /sandbox was killed or reached its end of life/)
  })
})

describe('E2B working directory (1)', () => {
  test('commands and relative file paths start in the same home', async () => {
    const home = (await sbx.commands.run('echo -n $HOME')).stdout
    assert.equal((await sbx.commands.run('pwd')).stdout, `${home}\n`)
    await sbx.commands.run('echo from-shell > made-by-shell.txt')
    assert.equal(await sbx.files.read('made-by-shell.txt'), 'from-shell\n')
    await sbx.files.write('made-by-files.txt', 'from-files')
    assert.equal((await sbx.commands.run('cat made-by-files.txt')).stdout, 'from-files')
    assert.equal((await sbx.files.getInfo('made-by-files.txt')).path, `${home}/made-by-files.txt`)
    // issue 40: a relative cwd is under the home too, and another user's home is its own
    await sbx.files.makeDir('sub')
    assert.equal((await sbx.commands.run('pwd', { cwd: 'sub' })).stdout, `${home}/sub\n`)
    assert.equal((await sbx.commands.run('pwd', { user: 'root' })).stdout, '/root\n')
  })
})

describe('E2B files as envd handles them (6)', () => {
  test('removing a missing path succeeds', async () => {
    await sbx.files.remove('/tmp/never-there-' + run)
  })

  test('writing over a file is a WRITE of that file; temp names never show', async () => {
    const dir = '/tmp/watch-' + run
    await sbx.files.write(`${dir}/f.txt`, 'one')
    const names = []
    let wrote
    const seen = new Promise((resolve) => { wrote = resolve })
    const handle = await sbx.files.watchDir(dir, (ev) => {
      names.push(ev.name)
      if (ev.type === 'write' && ev.name === 'f.txt') wrote()
    })
    await sbx.files.write(`${dir}/f.txt`, 'two')
    await seen
    await handle.stop()
    assert.deepEqual(names.filter((n) => n !== 'f.txt'), [])
  })

  test("user writes where only root may, as envd (root) writes for the user", async () => {
    const file = `/w-${run}/a/f.txt`
    const info = await sbx.files.write(file, 'mine')
    assert.equal(info.path, file)
    assert.equal(await sbx.files.read(file), 'mine')
    for (const p of [file, `/w-${run}/a`, `/w-${run}`]) {
      const e = await sbx.files.getInfo(p)
      assert.deepEqual([e.owner, e.group], ['user', 'user'], p)
    }
    assert.equal((await sbx.files.getInfo('/')).owner, 'root')
  })

  test("a symlink's target is the path it resolves to", async () => {
    await sbx.files.write('target.txt', 'x')
    await sbx.commands.run('ln -sf target.txt link.txt && ln -sf link.txt link2.txt && ln -sf nowhere dangling.txt')
    assert.equal((await sbx.files.getInfo('link2.txt')).symlinkTarget, '/home/user/target.txt')
    assert.equal((await sbx.files.getInfo('dangling.txt')).symlinkTarget, '/home/user/dangling.txt')
  })

  test('list walks depth first, by name, up to its depth', async () => {
    const dir = 'walk-' + run
    for (const d of ['b', 'a/y', 'a/x']) await sbx.files.makeDir(`${dir}/${d}`)
    await sbx.files.write(`${dir}/c.txt`, 'c')
    const rel = (entries) => entries.map((e) => e.path.slice(`/home/user/${dir}/`.length))
    assert.deepEqual(rel(await sbx.files.list(dir)), ['a', 'b', 'c.txt'])
    assert.deepEqual(rel(await sbx.files.list(dir, { depth: 2 })), ['a', 'a/x', 'a/y', 'b', 'c.txt'])
  })
})

describe('E2B listing (3)', () => {
  test('newest first, order, startedAfter/Before, template, pages; one templateID everywhere', opts, async () => {
    const md = { run, case: 'list' }
    // One after the other: their creation order is the test's.
    const made = []
    for (const template of ['base', 'code-interpreter-v1', 'base']) {
      made.push(await Sandbox.create(template, { metadata: md }))
    }
    const ids = made.map((s) => s.sandboxId)
    const list = async (o) => (await Sandbox.list({ ...o, query: { metadata: md, ...o?.query } }).nextItems())
    assert.deepEqual((await list()).map((s) => s.sandboxId), [...ids].reverse())
    assert.deepEqual((await list({ order: 'asc' })).map((s) => s.sandboxId), ids)

    const pages = Sandbox.list({ query: { metadata: md }, limit: 1 })
    const paged = []
    let fetched = 0
    while (pages.hasNext) {
      paged.push(...(await pages.nextItems()).map((s) => s.sandboxId))
      fetched++
    }
    assert.deepEqual(paged, [...ids].reverse())
    assert.equal(fetched, 3, 'the last page has no next token')

    const listed = await list({ order: 'asc' })
    assert.deepEqual(listed.map((s) => s.templateId), ['base', 'code-interpreter-v1', 'base'])
    assert.equal((await Sandbox.getInfo(ids[1])).templateId, 'code-interpreter-v1')
    assert.deepEqual((await Sandbox.getInfo(ids[1])).metadata, md)
    assert.deepEqual((await list({ query: { template: 'code-interpreter-v1' } })).map((s) => s.sandboxId), [ids[1]])

    // Answers are in milliseconds, hutch's instants finer: 1 ms past the
    // first one's start is after it and, a create later, before the next.
    const after = await list({ order: 'asc', query: { startedAfter: new Date(listed[0].startedAt.getTime() + 1) } })
    assert.deepEqual(after.map((s) => s.sandboxId), ids.slice(1))
    const q = new URLSearchParams({ metadata: new URLSearchParams(md).toString(), startedBefore: listed[2].startedAt.toISOString(), order: 'asc' })
    const { status, body } = await api('GET', `/v2/sandboxes?${q}`)
    assert.equal(status, 200)
    assert.deepEqual(body.map((s) => s.sandboxID), ids.slice(0, 2))

    await made[0].pause()
    assert.deepEqual((await list({ query: { state: ['paused'] } })).map((s) => s.sandboxId), [ids[0]])
    assert.deepEqual((await list({ query: { state: ['running'] } })).map((s) => s.sandboxId), [ids[2], ids[1]])
    await Promise.all(ids.map((id) => Sandbox.kill(id)))
  })
})

describe('E2B lifetimes (4)', () => {
  test('connect with a timeout only ever extends the end', opts, async () => {
    const s = await Sandbox.create('base', { metadata: { run, case: 'life' }, timeoutMs: 600_000 })
    const end = (await Sandbox.getInfo(s.sandboxId)).endAt
    await Sandbox.connect(s.sandboxId, { timeoutMs: 60_000 })
    assert.equal((await Sandbox.getInfo(s.sandboxId)).endAt.getTime(), end.getTime())
    await Sandbox.connect(s.sandboxId, { timeoutMs: 3_600_000 })
    assert.ok((await Sandbox.getInfo(s.sandboxId)).endAt > end)
    await s.kill()
  })

  test("onTimeout 'pause' counts from creation: a sandbox in steady use pauses at its end", opts, async () => {
    const s = await Sandbox.create('base', { metadata: { run, case: 'pause-at-end' }, timeoutMs: 3_000, lifecycle: { onTimeout: 'pause' } })
    assert.equal((await Sandbox.getInfo(s.sandboxId)).lifecycle?.onTimeout, 'pause')
    // Busy until it is paused: each round is activity, which an idle
    // timeout would count; a bound keeps a failure from hanging. (A
    // command caught by the pause is frozen with it: its timeoutMs ends
    // the wait.)
    const bound = Date.now() + 120_000
    let state = 'running'
    while (state === 'running' && Date.now() < bound) {
      await s.commands.run('true', { timeoutMs: 5_000 }).catch(() => {})
      state = (await Sandbox.getInfo(s.sandboxId)).state
    }
    assert.equal(state, 'paused')
    const again = await Sandbox.connect(s.sandboxId, { timeoutMs: 600_000 })
    assert.equal((await again.commands.run('echo back')).stdout, 'back\n')
    await again.kill()
  })
  test('a command in flight when the end pauses the sandbox ends as E2B reports it, not at its own timeout', opts, async () => {
    const s = await Sandbox.create('base', { metadata: { run, case: 'stream-at-end' }, timeoutMs: 4_000, lifecycle: { onTimeout: 'pause' } })
    // Its own timeout is longer than the test's: only the pause can end it.
    const err = await s.commands.run('sleep 3600', { timeoutMs: 3_600_000 }).catch((e) => e)
    assert.ok(err instanceof TimeoutError, `${err}`)
    assert.match(err.message, /sandbox was killed or reached its end of life/)
    assert.equal((await Sandbox.getInfo(s.sandboxId)).state, 'paused')
    await Sandbox.kill(s.sandboxId)
  })

  // A files-only pause keeps what was written and drops the processes:
  // the connect boots the sandbox again on its files.
  async function keptFilesOnly (s, marker) {
    assert.equal((await Sandbox.getInfo(s.sandboxId)).state, 'paused')
    const again = await Sandbox.connect(s.sandboxId, { timeoutMs: 600_000 })
    assert.equal(await again.files.read('kept.txt'), marker)
    assert.deepEqual((await again.commands.list()).filter((p) => [p.cmd, ...p.args].join(' ').includes('sleep 600')), [])
    await again.kill()
  }

  test('pause({ keepMemory: false }) keeps the files only; connect boots it on them', opts, async () => {
    const s = await Sandbox.create('base', { metadata: { run, case: 'pause-files' } })
    await s.files.write('kept.txt', 'files only')
    await s.commands.run('sleep 600', { background: true })
    assert.equal((await s.commands.list()).filter((p) => [p.cmd, ...p.args].join(' ').includes('sleep 600')).length, 1)
    assert.equal(await s.pause({ keepMemory: false }), true)
    await keptFilesOnly(s, 'files only')
  })

  test("onTimeout { action: 'pause', keepMemory: false } pauses to the files at the end", opts, async () => {
    const s = await Sandbox.create('base', { metadata: { run, case: 'pause-files-at-end' }, timeoutMs: 5_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } })
    await s.files.write('kept.txt', 'at the end')
    await s.commands.run('sleep 600', { background: true })
    const bound = Date.now() + 120_000
    while ((await Sandbox.getInfo(s.sandboxId)).state === 'running' && Date.now() < bound) await new Promise((resolve) => setTimeout(resolve, 500))
    await keptFilesOnly(s, 'at the end')
  })
})

describe('E2B metrics by range (5)', () => {
  test('a range has samples nobody read: the daemon samples every 5 s', async () => {
    // The first 10 s of the sandbox: a read's own sample comes later.
    const start = (await sbx.getInfo()).startedAt
    const end = new Date(start.getTime() + 10_000)
    while (Date.now() < end.getTime() + 1000) await new Promise((resolve) => setTimeout(resolve, 500)) // the range to pass
    const got = await sbx.getMetrics({ start, end })
    assert.ok(got.length >= 1, 'no sample taken without a read')
    assert.equal(got[0].cpuCount, 1)
  })

  test('getMetrics answers the samples kept in a range, none before the sandbox', async () => {
    const before = new Date()
    const all = await sbx.getMetrics()
    assert.ok(all.length >= 1, 'reading metrics takes a sample')
    for (const m of all) {
      assert.equal(m.cpuCount, 1)
      assert.ok(m.memTotal > 0 && m.cpuUsedPct >= 0 && m.cpuUsedPct <= 100, JSON.stringify(m))
    }
    const now = new Date()
    // A read takes no sample when the last one is less than a sampling
    // period (5 s) old: the range reaches back one period before this
    // test's first read, and one second more (the query is in seconds).
    const start = new Date(before.getTime() - 6000)
    const ranged = await sbx.getMetrics({ start, end: now })
    assert.ok(ranged.length >= 1)
    for (const m of ranged) assert.ok(m.timestamp >= new Date(start.getTime() - 1000) && m.timestamp <= new Date(now.getTime() + 1000), `${m.timestamp}`)
    const old = await sbx.getMetrics({ start: new Date(before.getTime() - 3_600_000), end: new Date(before.getTime() - 1_800_000) })
    assert.deepEqual(old, [])
  })
})

describe('E2B signed file URLs (9)', () => {
  test('downloadUrl and uploadUrl work as the SDK builds them; signatures are checked and expire', async () => {
    await sbx.files.write('signed.txt', 'signed content')
    const res = await fetch(await sbx.downloadUrl('signed.txt'))
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'signed content')
    const expiring = await fetch(await sbx.downloadUrl('signed.txt', { useSignatureExpiration: 60 }))
    assert.equal(await expiring.text(), 'signed content')

    const form = new FormData()
    form.append('file', new Blob(['uploaded']), 'uploaded.txt')
    const up = await fetch(await sbx.uploadUrl('uploaded.txt'), { method: 'POST', body: form })
    assert.equal(up.status, 200)
    assert.equal(await sbx.files.read('uploaded.txt'), 'uploaded')

    const url = new URL(await sbx.downloadUrl('signed.txt'))
    url.searchParams.set('path', 'made-by-files.txt') // signed for another file
    assert.equal((await fetch(url)).status, 401)
    const expired = await fetch(await sbx.downloadUrl('signed.txt', { useSignatureExpiration: -60 }))
    assert.equal(expired.status, 401)
  })
})

describe("E2B's base template (8)", () => {
  test('runs commands as user 1000 in /home/user, with curl, git and pip', async () => {
    const r = await sbx.commands.run('echo "$(id -un) $(id -u) $HOME $(pwd)"; touch ~/mine; command -v curl git pip sudo')
    assert.equal(r.stdout, 'user 1000 /home/user /home/user\n/usr/bin/curl\n/usr/bin/git\n/usr/bin/pip\n/usr/bin/sudo\n')
    assert.equal((await sbx.files.getInfo('mine')).path, '/home/user/mine')
    assert.equal((await sbx.commands.run('id -un', { user: 'root' })).stdout, 'root\n')
  })

  test("user's passwordless sudo makes root, with no more than root's capabilities", async () => {
    assert.equal((await sbx.commands.run('sudo id -u', { user: 'user' })).stdout, '0\n')
    // CAP_SYS_RESOURCE (bit 24) is the agent's alone (docs/security.md)
    const eff = (await sbx.commands.run("sudo sh -c 'grep CapEff /proc/self/status'", { user: 'user' })).stdout
    assert.equal(BigInt('0x' + eff.split(/\s+/)[1]) & (1n << 24n), 0n, eff)
  })
})
