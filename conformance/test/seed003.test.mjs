// Seed 003 (field-level schemas): it has no code samples, so this file
// calls each function with every field the schema lists and checks the
// response fields' presence and types, through the real iii-sdk.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { BOOT_TIMEOUT_MS, closeEngine, engine, envelopeOf } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const call = (function_id, payload) => iii.trigger({ function_id, payload, timeoutMs: BOOT_TIMEOUT_MS })
const codeOf = (p) => p.then(() => 'ok', (err) => envelopeOf(err)?.code ?? err.code)

describe('sandbox::create, exec, list, stop', () => {
  test('every field of every schema', { timeout: BOOT_TIMEOUT_MS }, async () => {
    // create: cpus, env, idle_timeout_secs, image (required), memory_mb, name, network.
    const created = await call('sandbox::create', {
      cpus: 1, env: ['GREETING=hello'], idle_timeout_secs: 120, image: 'python', memory_mb: 256, name: 'schema', network: false,
    })
    assert.match(created.sandbox_id, UUID)
    assert.equal(created.image, 'python')
    const { sandbox_id } = created

    // exec: args, cmd (required), env, sandbox_id (required), stdin (base64), timeout_ms, workdir.
    const out = await call('sandbox::exec', {
      sandbox_id,
      cmd: 'python3',
      args: ['-c', 'import os, sys; print(os.getcwd(), os.environ["GREETING"], os.environ["EXTRA"], sys.stdin.read())'],
      env: ['EXTRA=x'],
      stdin: Buffer.from('piped').toString('base64'),
      timeout_ms: 10_000,
      workdir: '/tmp',
    })
    assert.equal(out.stdout, '/tmp hello x piped\n')
    assert.ok(Number.isInteger(out.duration_ms) && out.duration_ms >= 0, 'duration_ms is a non-negative integer')
    assert.equal(out.timed_out, false)
    assert.equal(out.exit_code, 0)
    assert.equal(out.success, true)

    // env also as an object (the reference), exec-time over create-time.
    const obj = await call('sandbox::exec', { sandbox_id, cmd: 'printenv', args: ['GREETING'], env: { GREETING: 'hi' } })
    assert.equal(obj.stdout, 'hi\n')

    // "node" is correct, "node -v" is not a shell line: with args it is S001;
    // alone it is split into argv (seed 001, the reference).
    assert.equal(await codeOf(call('sandbox::exec', { sandbox_id, cmd: 'python3 -c', args: ['print(1)'] })), 'S001')
    assert.equal((await call('sandbox::exec', { sandbox_id, cmd: 'python3 -c "print(3)"' })).stdout, '3\n')
    assert.equal(await codeOf(call('sandbox::exec', { sandbox_id, cmd: 'true', stdin: '%%%' })), 'S001')
    assert.equal(await codeOf(call('sandbox::exec', { sandbox_id, cmd: 'true', env: ['1BAD=x'] })), 'S001')

    // A nonzero exit, a signal and a missing command are results, not errors.
    const failed = await call('sandbox::exec', { sandbox_id, cmd: 'sh', args: ['-c', 'echo oops >&2; exit 3'] })
    assert.deepEqual([failed.exit_code, failed.success, failed.stderr], [3, false, 'oops\n'])
    const missing = await call('sandbox::exec', { sandbox_id, cmd: 'no-such-program' })
    assert.equal(missing.exit_code, 127)

    // list: sandboxes[] with age_secs, exec_in_progress, sandbox_id (required).
    const { sandboxes } = await call('sandbox::list', {})
    const entry = sandboxes.find((s) => s.sandbox_id === sandbox_id)
    assert.ok(Number.isInteger(entry.age_secs) && entry.age_secs >= 0)
    assert.equal(entry.exec_in_progress, false)
    assert.equal(entry.name, 'schema')

    // stop: sandbox_id (required), wait; stopping twice is not an error.
    assert.deepEqual(await call('sandbox::stop', { sandbox_id, wait: true }), { sandbox_id, stopped: true })
    assert.deepEqual(await call('sandbox::stop', { sandbox_id }), { sandbox_id, stopped: true })
  })

  test('required fields', async () => {
    assert.equal(await codeOf(call('sandbox::create', {})), 'S001')
    assert.equal(await codeOf(call('sandbox::exec', { cmd: 'true' })), 'S001')
    assert.equal(await codeOf(call('sandbox::stop', {})), 'S001')
    assert.equal(await codeOf(call('sandbox::create', { image: 'python', cpus: -1 })), 'S001')
  })
})

describe('sandbox::fs::*', () => {
  test('all ten functions are served', async () => {
    for (const op of ['chmod', 'grep', 'ls', 'mkdir', 'mv', 'read', 'rm', 'sed', 'stat', 'write']) {
      const code = await codeOf(call(`sandbox::fs::${op}`, { sandbox_id: '00000000-0000-4000-8000-000000000000', path: '/x' }))
      assert.notEqual(code, 'function_not_found', `sandbox::fs::${op}`)
      assert.match(code, /^S\d{3}$/, `sandbox::fs::${op}`)
    }
  })
})
