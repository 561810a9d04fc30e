// State over the engine through the real iii-sdk: pause and resume keep a
// sandbox's memory and files, a paused sandbox answers S005, snapshots
// restore and forks copy, auto_resume resumes on the next call, and
// metadata filters the list.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { BOOT_TIMEOUT_MS, closeEngine, engine, envelopeOf, rejects } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const call = (function_id, payload, timeoutMs = 120_000) => iii.trigger({ function_id, payload, timeoutMs })
const py = (sandbox_id, code) => call('sandbox::exec', { sandbox_id, argv: ['python3', '-c', code] })

// A counter in a background process's memory: each connection gets the next number.
const server = 'import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("127.0.0.1",7000));s.listen(8);n=0\nwhile True:\n  c,_=s.accept();n+=1;c.sendall(str(n).encode());c.close()'
const client = 'import socket,time\nfor _ in range(300):\n  try:\n    s=socket.create_connection(("127.0.0.1",7000));break\n  except OSError: time.sleep(0.05)\nprint(s.recv(16).decode())'
const next = async (sandbox_id) => Number((await py(sandbox_id, client)).stdout.trim())

describe('state over the engine', () => {
  test('pause and resume keep memory and files; a paused sandbox answers S005', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await call('sandbox::create', { image: 'python', metadata: { suite: 'conformance-state' } }, BOOT_TIMEOUT_MS)
    await call('sandbox::process::start', { sandbox_id, argv: ['python3', '-c', server] })
    await call('sandbox::fs::write', { sandbox_id, path: '/root/note', content: 'kept' })
    assert.equal(await next(sandbox_id), 1)

    const paused = await call('sandbox::pause', { sandbox_id })
    assert.deepEqual([paused.state, paused.changed], ['paused', true])
    const listed = (await call('sandbox::list', { state: ['paused'], metadata: { suite: 'conformance-state' } })).sandboxes
    assert.deepEqual(listed.map((s) => [s.sandbox_id, s.state]), [[sandbox_id, 'paused']])
    assert.equal(envelopeOf(await rejects(call('sandbox::exec', { sandbox_id, cmd: 'true' })))?.code, 'S005')

    const resumed = await call('sandbox::resume', { sandbox_id })
    assert.deepEqual([resumed.state, resumed.changed], ['running', true])
    assert.equal(await next(sandbox_id), 2)
    assert.equal((await call('sandbox::exec', { sandbox_id, cmd: 'cat', args: ['/root/note'] })).stdout, 'kept')
    await call('sandbox::stop', { sandbox_id, wait: true })
  })

  test('a snapshot restores and a fork copies, memory and files included', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await call('sandbox::create', { image: 'python' }, BOOT_TIMEOUT_MS)
    await call('sandbox::process::start', { sandbox_id, argv: ['python3', '-c', server] })
    await call('sandbox::exec', { sandbox_id, cmd: 'sh', args: ['-c', 'echo kept > /root/note'] })
    assert.equal(await next(sandbox_id), 1)
    const snap = await call('sandbox::snapshot::create', { sandbox_id, name: 'conformance' })
    assert.ok(snap.size_bytes > 0)
    const restored = (await call('sandbox::create', { snapshot_id: snap.snapshot_id }, BOOT_TIMEOUT_MS)).sandbox_id
    assert.equal(await next(restored), 2)
    const { sandbox_ids } = await call('sandbox::fork', { sandbox_id, count: 2 }, BOOT_TIMEOUT_MS)
    assert.equal(sandbox_ids.length, 2)
    for (const id of sandbox_ids) assert.equal(await next(id), 2)
    assert.equal((await call('sandbox::exec', { sandbox_id: sandbox_ids[1], cmd: 'cat', args: ['/root/note'] })).stdout, 'kept\n')
    await call('sandbox::snapshot::delete', { snapshot_id: snap.snapshot_id })
    assert.equal(envelopeOf(await rejects(call('sandbox::snapshot::get', { snapshot_id: snap.snapshot_id })))?.code, 'S006')
    for (const id of [sandbox_id, restored, ...sandbox_ids]) await call('sandbox::stop', { sandbox_id: id, wait: true })
  })

  test('auto_resume resumes on the next call; set_timeout answers the new end', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await call('sandbox::create', { image: 'python', auto_resume: true }, BOOT_TIMEOUT_MS)
    await call('sandbox::pause', { sandbox_id, depth: 'freeze' })
    const r = await call('sandbox::exec', { sandbox_id, cmd: 'echo', args: ['awake'] })
    assert.equal(r.stdout, 'awake\n')
    const { expires_at } = await call('sandbox::set_timeout', { sandbox_id, timeout_secs: 600 })
    assert.ok(Date.parse(expires_at) > Date.now() + 500_000, expires_at)
    const info = await call('sandbox::get', { sandbox_id })
    assert.deepEqual([info.state, info.auto_resume, info.timeout_secs], ['running', true, 600])
    await call('sandbox::stop', { sandbox_id, wait: true })
  })
})
