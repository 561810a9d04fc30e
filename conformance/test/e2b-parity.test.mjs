// The 2026 routes of the stock `e2b` SDK (2.51.0) against hutch: fork,
// snapshots and a create from one, volumes mounted through volumeMounts,
// template aliases and tags, envd's /envs, /metrics and /init, its file
// metadata and watch entries (0.6.2 to 0.6.4), volumes' content API, and
// the documented errors of what hutch does not serve (issue 40).
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { Sandbox as CodeInterpreter } from '@e2b/code-interpreter'
import { NotFoundError, Sandbox, Template, Volume } from 'e2b'
import { BOOT_TIMEOUT_MS, killE2B, startDaemon } from '../lib.mjs'

const run = randomUUID().slice(0, 8)
const volumes = []
after(async () => {
  await killE2B(Sandbox)
  for (const v of volumes) await Volume.destroy(v).catch(() => {})
})

const opts = { timeoutMs: BOOT_TIMEOUT_MS }
const create = (template = 'base', o = {}) =>
  Sandbox.create(template, { metadata: { run }, timeoutMs: 600_000, requestTimeoutMs: BOOT_TIMEOUT_MS, ...o })

// counterOf reads the counter file of sb: 0 before its first write.
const counterOf = async (sb) => Number((await sb.commands.run('cat /tmp/counter 2>/dev/null || echo 0')).stdout.trim())

// growing resolves once sb's counter is past from.
async function growing (sb, from) {
  for (;;) {
    const n = await counterOf(sb)
    if (n > from) return n
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('E2B parity', () => {
  test('fork: both copies keep counting, each on its own', opts, async () => {
    const sb = await create()
    await sb.commands.run('i=0; while :; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.1; done', { background: true })
    const before = await growing(sb, 0)
    const [copy] = await sb.fork({ requestTimeoutMs: BOOT_TIMEOUT_MS })
    assert.ok(copy instanceof Sandbox, String(copy))
    assert.notEqual(copy.sandboxId, sb.sandboxId)
    // The copy's counter went on from the checkpoint, past before.
    const start = await counterOf(copy)
    assert.ok(start >= before, `copy starts at ${start}, source was at ${before}`)
    await growing(copy, start)
    await growing(sb, await counterOf(sb))
    // Independent: a file one writes the other does not see.
    await copy.files.write('/tmp/mine', 'copy')
    assert.equal(await sb.files.exists('/tmp/mine'), false)
    await Promise.all([sb.kill(), copy.kill()])
  })

  test('snapshot, list, create from it, delete', opts, async () => {
    const sb = await create()
    await sb.files.write('/tmp/state', 'kept')
    const name = `snap-${run}`
    const snap = await sb.createSnapshot({ name, requestTimeoutMs: BOOT_TIMEOUT_MS })
    assert.ok(snap.snapshotId)
    assert.deepEqual(snap.names, [name])
    const listed = await Sandbox.listSnapshots({ sandboxId: sb.sandboxId }).nextItems()
    assert.deepEqual(listed.map((s) => s.snapshotId), [snap.snapshotId])
    for (const ref of [snap.snapshotId, name]) {
      const restored = await create(ref)
      assert.equal(await restored.files.read('/tmp/state'), 'kept')
      await restored.kill()
    }
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)
    await sb.kill()
  })

  test('volume: create, write through volumecontent, mount in two sandboxes, read back through both', opts, async () => {
    const name = `vol-${run}`
    const vol = await Volume.create(name)
    volumes.push(vol.volumeId)
    assert.equal(vol.name, name)
    assert.ok((await Volume.list()).some((v) => v.volumeId === vol.volumeId))
    assert.equal((await Volume.getInfo(vol.volumeId)).name, name)

    // The content API, with the volume's token and no sandbox.
    const o = { apiUrl: process.env.E2B_API_URL }
    const content = await Volume.connect(vol.volumeId, o)
    const dir = await content.makeDir('/seed/deep', { ...o, force: true })
    assert.equal(dir.type, 'directory')
    const w = await content.writeFile('/seed/hi.txt', 'from the host', { ...o, mode: 0o640 })
    assert.deepEqual([w.name, w.type, w.size, w.mode], ['hi.txt', 'file', 13, 0o640])
    assert.ok(w.mtime instanceof Date && !isNaN(w.mtime), String(w.mtime))
    await assert.rejects(content.writeFile('/seed/hi.txt', 'again', o), /409/)
    await assert.rejects(content.readFile('/nope', o), (err) => err.name === 'VolumePathNotFoundError')

    // E2B's base template runs as `user`; the volume's files are root's.
    const root = { user: 'root' }
    const [writer, reader] = await Promise.all([
      create('base', { volumeMounts: { '/data': vol } }),
      create('base', { volumeMounts: { '/mnt/v': name } })])
    assert.deepEqual((await writer.getInfo()).volumeMounts, [{ name, path: '/data' }])
    assert.equal(await reader.files.read('/mnt/v/seed/hi.txt', root), 'from the host')
    assert.equal((await reader.commands.run('stat -c %a /mnt/v/seed/hi.txt', root)).stdout, '640\n')
    await writer.files.write('/data/hello.txt', 'from the writer', root)
    assert.equal(await reader.files.read('/mnt/v/hello.txt', root), 'from the writer')
    await reader.files.write('/mnt/v/back.txt', 'from the reader', root)
    assert.equal(await writer.files.read('/data/back.txt', root), 'from the reader')

    // What the sandboxes wrote, through the content API.
    assert.equal(await content.readFile('/hello.txt', o), 'from the writer')
    assert.deepEqual((await content.list('/', o)).map((e) => e.name).filter((n) => n !== 'lost+found').sort(), ['back.txt', 'hello.txt', 'seed'])
    assert.deepEqual((await content.list('/seed', { ...o, depth: 2 })).map((e) => e.path), ['/seed/deep', '/seed/hi.txt'])
    assert.equal((await content.updateMetadata('/seed/hi.txt', { mode: 0o600 }, o)).mode, 0o600)
    await content.remove('/seed', o)
    assert.equal(await content.exists('/seed', o), false)
    assert.equal(await writer.files.exists('/data/seed', root), false)
    // In use, it is not destroyed; once its sandboxes have stopped
    // (kill answers before the stop ends), it is.
    await assert.rejects(Volume.destroy(vol.volumeId), /409: S262/)
    await Promise.all([writer.kill(), reader.kill()])
    for (;;) {
      try {
        assert.equal(await Volume.destroy(vol.volumeId), true)
        break
      } catch (err) {
        if (!/409: S262/.test(err.message)) throw err
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    assert.equal(await Volume.destroy(vol.volumeId), false)
  })

  test('templates: aliases and tags; assigning tags is 501', opts, async () => {
    assert.equal(await Template.exists(`no-such-${run}`), false)
    await assert.rejects(Template.getTags(`no-such-${run}`), /404/)
    await assert.rejects(Template.assignTags(`base:${run}`, ['v2']), /501: hutch templates have one build/)
    await assert.rejects(Template.removeTags('base', ['v2']), /501: hutch templates have one build/)
  })
})

// A daemon of its own without e2b.api_keys nor api_tokens: E2B's callers
// are the local user, whose templates the REST API makes.
describe('E2B templates and shapes on an open daemon', () => {
  let daemon
  after(() => daemon?.stop())

  test('template get, alias, tags, delete; its runtime, cpus and memory apply; metadata picks them', opts, async () => {
    daemon = await startDaemon()
    const conn = { apiUrl: daemon.url, sandboxUrl: daemon.url, apiKey: 'e2b_open_daemon_ignores_it', requestTimeoutMs: BOOT_TIMEOUT_MS }
    const rest = async (method, path, body) => {
      const res = await fetch(daemon.url + path, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) })
      const json = await res.json()
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
      return json
    }
    const name = `shape-${run}`
    await rest('POST', '/v1/templates', { name, image: 'python', cpus: 2, memory_mb: 384, runtime: 'gvisor' })

    assert.equal(await Template.exists(name, conn), true)
    const tags = await Template.getTags(name, conn)
    assert.deepEqual(tags.map((t) => t.tag), ['default'])
    assert.match(tags[0].buildId, /^[0-9a-f-]{36}$/)

    const sb = await Sandbox.create(name, { ...conn, timeoutMs: 300_000 })
    const info = await Sandbox.getInfo(sb.sandboxId, conn)
    assert.equal(info.cpuCount, 2)
    assert.equal(info.memoryMB, 384)
    assert.equal((await rest('GET', `/v1/sandboxes/${sb.sandboxId}`)).runtime, 'gvisor')
    assert.equal((await sb.commands.run('nproc')).stdout.trim(), '2')
    await sb.kill()

    const shaped = await Sandbox.create('python', { ...conn, timeoutMs: 300_000, metadata: { 'hutch.runtime': 'gvisor', 'hutch.cpus': '2', 'hutch.memory_mb': '320' } })
    const shapedInfo = await Sandbox.getInfo(shaped.sandboxId, conn)
    assert.equal(shapedInfo.cpuCount, 2)
    assert.equal(shapedInfo.memoryMB, 320)
    assert.equal((await rest('GET', `/v1/sandboxes/${shaped.sandboxId}`)).runtime, 'gvisor')
    await shaped.kill()
    await assert.rejects(Sandbox.create('python', { ...conn, metadata: { 'hutch.runtime': 'no-such-runtime' } }), /400: .*no-such-runtime/)

    // Sandbox.deleteSnapshot and template deletes share DELETE /templates/{id}.
    assert.equal(await Sandbox.deleteSnapshot(name, conn), true)
    assert.equal(await Template.exists(name, conn), false)
    assert.equal(await Sandbox.deleteSnapshot(name, conn), false)
  })
})

// envd's 0.6 surface and the interpreter's languages, on the suite's daemon.
describe('E2B envd 0.6 and the interpreter languages', () => {
  // envd calls the E2B SDK does not wrap (/envs, /metrics, /init).
  const envd = (sb, method, path, body) => fetch(process.env.E2B_SANDBOX_URL + path, {
    method,
    headers: { 'E2b-Sandbox-Id': sb.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': sb.envdAccessToken, 'content-type': 'application/json' },
    body: body && JSON.stringify(body)
  })

  test('entry owner, group, permissions, symlink target; commands with envs, cwd, user; kill; /envs, /metrics, /init', opts, async () => {
    const sb = await create('base', { envs: { FROM_CREATE: 'c' } })
    await sb.files.write('/tmp/d/f.txt', 'x')
    await sb.commands.run('ln -s f.txt /tmp/d/link && sudo chown nobody:nogroup /tmp/d/f.txt')
    const link = await sb.files.getInfo('/tmp/d/link')
    assert.equal(link.type, 'symlink')
    assert.equal(link.symlinkTarget, '/tmp/d/f.txt') // resolved, as envd answers (e2b-conformance's symlink test)
    assert.equal(link.permissions, 'Lrwxrwxrwx')
    const me = (await sb.commands.run('id -un; id -gn')).stdout.trim().split('\n')
    assert.deepEqual([link.owner, link.group], me)
    const listed = await sb.files.list('/tmp/d')
    const f = listed.find((e) => e.name === 'f.txt')
    assert.deepEqual([f.owner, f.group, f.permissions, f.symlinkTarget], ['nobody', 'nogroup', '-rw-r--r--', undefined])

    const ran = await sb.commands.run('echo "$A $FROM_CREATE"; pwd; id -un', { envs: { A: 'per-command' }, cwd: '/tmp/d', user: 'nobody' })
    assert.equal(ran.stdout, 'per-command c\n/tmp/d\nnobody\n')
    const bg = await sb.commands.run('sleep 600', { background: true })
    assert.equal(await sb.commands.kill(bg.pid), true)
    await assert.rejects(bg.wait(), (err) => err.exitCode !== 0)
    assert.equal(await sb.commands.kill(bg.pid), false)

    assert.equal((await envd(sb, 'POST', '/init', { envVars: { FROM_INIT: 'i' } })).status, 204)
    const envs = await (await envd(sb, 'GET', '/envs')).json()
    assert.equal(envs.FROM_CREATE, 'c')
    assert.equal(envs.FROM_INIT, 'i')
    assert.equal((await sb.commands.run('echo $FROM_INIT')).stdout, 'i\n')
    const refused = await envd(sb, 'POST', '/init', { defaultUser: 'nobody' })
    assert.equal(refused.status, 400)
    const m = await (await envd(sb, 'GET', '/metrics')).json()
    assert.equal(m.cpu_count, 1)
    assert.equal(m.mem_total, 512 * 1024 * 1024)
    assert.ok(m.mem_used > 0 && m.ts > 0, JSON.stringify(m))
    await sb.kill()
  })

  test('envd 0.6.4: file metadata written, read by getInfo, list and watch events with includeEntry and allowNetworkMounts', opts, async () => {
    const sb = await create()
    const info = await Sandbox.getInfo(sb.sandboxId)
    assert.equal(info.envdVersion, '0.6.4')
    const md = { author: 'alice', 'build-id': '42' }
    const w = await sb.files.write('/tmp/m/a.txt', 'hi', { metadata: md })
    assert.deepEqual(w.metadata, md)
    assert.deepEqual((await sb.files.getInfo('/tmp/m/a.txt')).metadata, md)
    await sb.files.write('/tmp/m/plain.txt', 'no metadata')
    const listed = await sb.files.list('/tmp/m')
    assert.deepEqual(listed.map((e) => [e.name, e.metadata]), [['a.txt', md], ['plain.txt', undefined]])
    // A rewrite replaces the file, and with it its metadata.
    await sb.files.write('/tmp/m/a.txt', 'again', { metadata: { author: 'bob' } })
    assert.deepEqual((await sb.files.getInfo('/tmp/m/a.txt')).metadata, { author: 'bob' })
    // Past the agent's bounds (64 keys): refused, nothing written.
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']))
    await assert.rejects(sb.files.write('/tmp/m/many.txt', 'x', { metadata: many }), /65 metadata keys, at most 64/)
    assert.equal(await sb.files.exists('/tmp/m/many.txt'), false)

    const events = []
    let seen
    const done = new Promise((resolve) => { seen = resolve })
    const handle = await sb.files.watchDir('/tmp/m', (ev) => {
      events.push(ev)
      if (ev.name === 'b.txt' && ev.entry) seen()
    }, { includeEntry: true, allowNetworkMounts: true })
    await sb.files.write('/tmp/m/b.txt', 'b', { metadata: { tag: 'watched' } })
    await done
    const ev = events.find((e) => e.name === 'b.txt' && e.entry)
    assert.equal(ev.entry.path, '/tmp/m/b.txt')
    assert.deepEqual(ev.entry.metadata, { tag: 'watched' })
    await handle.stop()
    await sb.kill()
  })

  test('typescript with the typescript package the image carries, bash, per-run envs and timeouts, languages without a kernel', opts, async () => {
    const sbx = await CodeInterpreter.create('node', { metadata: { run }, requestTimeoutMs: BOOT_TIMEOUT_MS })
    const ts = await sbx.createCodeContext({ language: 'ts' })
    assert.equal(ts.language, 'typescript')
    const missing = await sbx.runCode('const a: number = 1; a', { context: ts })
    assert.equal(missing.error?.name, 'TypeScriptUnavailable')
    // npm's package, put where `npm install -g typescript` does.
    const pkg = new URL('../node_modules/typescript/', import.meta.url)
    const dir = '/usr/local/lib/node_modules/typescript'
    await sbx.files.write([
      { path: `${dir}/package.json`, data: await readFile(new URL('package.json', pkg), 'utf8') },
      { path: `${dir}/lib/typescript.js`, data: await readFile(new URL('lib/typescript.js', pkg), 'utf8') }])
    const ctx = await sbx.createCodeContext({ language: 'typescript' })
    await sbx.runCode('interface P { n: number }\nconst p: P = { n: 41 }', { context: ctx })
    const ex = await sbx.runCode('const add = (a: number, b: number): number => a + b\nconsole.log("typed"); add(p.n, 1)', { context: ctx })
    assert.equal(ex.error, undefined)
    assert.equal(ex.text, '42')
    assert.equal(ex.logs.stdout.join(''), 'typed\n')
    assert.equal((await sbx.runCode('const s: string = await Promise.resolve("later"); s', { language: 'ts' })).text, "'later'")
    // A run's envs are its own.
    assert.equal((await sbx.runCode('process.env.RUN_ONLY', { context: ctx, envs: { RUN_ONLY: 'yes' } })).text, "'yes'")
    assert.equal((await sbx.runCode('process.env.RUN_ONLY', { context: ctx })).text, undefined)

    const sh = await sbx.createCodeContext({ language: 'bash' })
    await sbx.runCode('cd /tmp; X=5', { context: sh })
    const out = await sbx.runCode('echo "$PWD $X"', { context: sh })
    assert.equal(out.logs.stdout.join(''), '/tmp 5\n')

    await assert.rejects(sbx.createCodeContext({ language: 'r' }), (err) => err instanceof NotFoundError && /language \\"r\\": hutch's code interpreter has no kernel for it/.test(err.message))
    await sbx.kill()

    // An image without node has no runtime for typescript: the same error class, saying so.
    const py = await CodeInterpreter.create('base', { metadata: { run }, requestTimeoutMs: BOOT_TIMEOUT_MS })
    assert.equal((await py.runCode('import os; os.environ.get("E")', { envs: { E: 'per-run' } })).text, "'per-run'")
    assert.equal((await py.runCode('os.environ.get("E")')).text, undefined)
    // A run past its timeoutMs is interrupted: the context takes the next.
    await assert.rejects(py.runCode('while True: pass', { timeoutMs: 1000 }))
    assert.equal((await py.runCode('6 * 7')).text, '42')
    await assert.rejects(py.createCodeContext({ language: 'typescript' }), (err) => err instanceof NotFoundError && /has no node for typescript contexts/.test(err.message))
    await py.kill()
  })
})
