// E2B's control plane through the stock `e2b` SDK, pointed at hutch by
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY: create, getInfo, list
// with metadata and pages, setTimeout, pause and connect-to-resume, kill,
// metrics, and owner scoping by API key.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { AuthenticationError, NotFoundError, Sandbox } from 'e2b'
import { BOOT_TIMEOUT_MS, E2B_OTHER_API_KEY, killE2B } from '../lib.mjs'

after(() => killE2B(Sandbox))

const run = randomUUID()
const opts = { timeoutMs: BOOT_TIMEOUT_MS }

describe('E2B control plane', () => {
  test('create, getInfo, setTimeout, list with metadata and pages, kill', opts, async () => {
    const created = await Promise.all([1, 2, 3].map((n) =>
      Sandbox.create('base', { metadata: { run, n: String(n) }, timeoutMs: 300_000, requestTimeoutMs: BOOT_TIMEOUT_MS })))
    const ids = created.map((s) => s.sandboxId)
    assert.equal(new Set(ids).size, 3)

    const info = await Sandbox.getInfo(ids[0])
    assert.equal(info.sandboxId, ids[0])
    assert.deepEqual(info.metadata, { run, n: '1' })
    assert.equal(info.state, 'running')
    assert.ok(info.envdVersion >= '0.5.7', info.envdVersion)
    assert.ok(info.endAt > info.startedAt)
    // getHost(port) is {port}-{id}.{the answers' domain}: hutch's preview
    // host. This daemon has no preview_domain, so the domain is a name
    // that never resolves, never the SDK's fallback e2b.app.
    assert.equal(info.sandboxDomain, 'no-preview-domain.invalid')
    assert.equal(created[0].getHost(8000), `8000-${ids[0]}.no-preview-domain.invalid`)

    await created[0].setTimeout(3_600_000)
    const later = await Sandbox.getInfo(ids[0])
    assert.ok(later.endAt > info.endAt, `endAt ${later.endAt} after ${info.endAt}`)

    const one = await Sandbox.list({ query: { metadata: { run, n: '2' } } }).nextItems()
    assert.deepEqual(one.map((s) => s.sandboxId), [ids[1]])

    const pages = Sandbox.list({ query: { metadata: { run } }, limit: 2 })
    const first = await pages.nextItems()
    assert.equal(first.length, 2)
    assert.ok(pages.hasNext, 'a second page')
    const second = await pages.nextItems()
    assert.equal(second.length, 1)
    assert.ok(!pages.hasNext)
    assert.deepEqual([...first, ...second].map((s) => s.sandboxId).sort(), [...ids].sort())

    const metrics = await created[0].getMetrics()
    assert.ok(Array.isArray(metrics))
    for (const m of metrics) assert.equal(m.cpuCount, 1)

    assert.equal(await Sandbox.kill(ids[0]), true)
    assert.equal(await Sandbox.kill(ids[0]), false)
    await assert.rejects(Sandbox.getInfo(ids[0]), NotFoundError)
    const left = await Sandbox.list({ query: { metadata: { run } } }).nextItems()
    assert.deepEqual(left.map((s) => s.sandboxId).sort(), ids.slice(1).sort())
    await Promise.all(created.slice(1).map((s) => s.kill()))
  })

  test('pause, then connect resumes it; pausing twice says so', opts, async () => {
    const sbx = await Sandbox.create({ metadata: { run, case: 'pause' }, requestTimeoutMs: BOOT_TIMEOUT_MS })
    assert.equal(await sbx.isRunning(), true)
    assert.equal(await sbx.pause(), true)
    assert.equal(await Sandbox.pause(sbx.sandboxId), false)
    const paused = await Sandbox.list({ query: { metadata: { run, case: 'pause' }, state: ['paused'] } }).nextItems()
    assert.deepEqual(paused.map((s) => [s.sandboxId, s.state]), [[sbx.sandboxId, 'paused']])
    assert.equal(await sbx.isRunning(), false)

    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal(again.sandboxId, sbx.sandboxId)
    assert.equal(await again.isRunning(), true)
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running')
    await again.kill()
  })

  test("another owner's key neither sees nor kills the sandbox; a wrong key is refused", opts, async () => {
    const sbx = await Sandbox.create({ metadata: { run, case: 'owners' }, requestTimeoutMs: BOOT_TIMEOUT_MS })
    const other = { apiKey: E2B_OTHER_API_KEY }
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId, other), NotFoundError)
    assert.equal(await Sandbox.kill(sbx.sandboxId, other), false)
    await assert.rejects(Sandbox.connect(sbx.sandboxId, other), NotFoundError)
    const theirs = await Sandbox.list({ ...other, query: { metadata: { run } } }).nextItems()
    assert.deepEqual(theirs, [])
    await assert.rejects(Sandbox.list({ apiKey: 'e2b_' + '0'.repeat(40) }).nextItems(), AuthenticationError)
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running')
    await sbx.kill()
  })
})
