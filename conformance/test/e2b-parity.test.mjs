// The 2026 routes of the stock `e2b` SDK (2.51.0) against hutch: fork,
// snapshots and a create from one, volumes mounted through volumeMounts,
// template aliases and tags, envd's /envs, /metrics and /init, and the
// documented errors of what hutch does not serve (issue 40).
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Sandbox, Template, Volume } from 'e2b'
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

// counterOf reads the counter file of sb.
const counterOf = async (sb) => Number((await sb.commands.run('cat /tmp/counter')).stdout.trim())

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

  test('volume: create, mount in two sandboxes, read back; content API is 501', opts, async () => {
    const name = `vol-${run}`
    const vol = await Volume.create(name)
    volumes.push(vol.volumeId)
    assert.equal(vol.name, name)
    assert.ok((await Volume.list()).some((v) => v.volumeId === vol.volumeId))
    assert.equal((await Volume.getInfo(vol.volumeId)).name, name)

    const [writer, reader] = await Promise.all([
      create('base', { volumeMounts: { '/data': vol } }),
      create('base', { volumeMounts: { '/mnt/v': name } })])
    await writer.files.write('/data/hello.txt', 'from the writer')
    assert.equal(await reader.files.read('/mnt/v/hello.txt'), 'from the writer')
    await reader.files.write('/mnt/v/back.txt', 'from the reader')
    assert.equal(await writer.files.read('/data/back.txt'), 'from the reader')

    // The content API checks the volume's token, then says why it is not served.
    const content = await Volume.connect(vol.volumeId, { apiUrl: process.env.E2B_API_URL })
    await assert.rejects(content.list('/', { apiUrl: process.env.E2B_API_URL }), /501: volume content is not served outside a sandbox/)
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
