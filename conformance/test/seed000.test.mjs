// Seed 000 (the sandbox API guide): every code sample, as written; only the
// engine URL is hutch's, and `iii sandbox ...` shell lines run as `hutch ...`.
// Each sample is followed by assertions on what it produced.
import { after, describe, mock, test } from 'node:test'
import assert from 'node:assert/strict'
import { BOOT_TIMEOUT_MS, closeEngine, engine, envelopeOf, http, sh } from '../lib.mjs'

const iii = engine()
after(closeEngine)

describe('Quickstart', () => {
  test('one-shot from the terminal', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const r = await sh(`hutch run python -- python3 -c 'print("hi")'`)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'hi\n')
  })

  test('create, exec, then stop from code', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const logged = mock.method(console, 'log', () => {})
    try {
      const { sandbox_id } = await iii.trigger({
        function_id: 'sandbox::create',
        payload: { image: 'python' },
        timeoutMs: 300_000,
      })
      const out = await iii.trigger({
        function_id: 'sandbox::exec',
        payload: { sandbox_id, cmd: 'python3', args: ['-c', 'print("hi")'] },
        timeoutMs: 35_000,
      })
      console.log(out.stdout) // "hi\n"
      await iii.trigger({
        function_id: 'sandbox::stop',
        payload: { sandbox_id, wait: true },
      })

      assert.deepEqual(logged.mock.calls[0].arguments, ['hi\n'])
      const { sandboxes } = await http('GET', '/v1/sandboxes')
      assert.equal(sandboxes.find((s) => s.sandbox_id === sandbox_id)?.stopped, true)
    } finally {
      logged.mock.restore()
    }
  })

  test('full lifecycle from the terminal', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const r = await sh(`
SB=$(hutch create python --idle-timeout 300)
hutch exec "$SB" -- python3 -c 'print(2+2)' # 4
hutch exec "$SB" -- python3 -c 'import sys; print(sys.version)'
hutch stop "$SB"
echo "id=$SB"
`)
    assert.equal(r.code, 0, r.stderr)
    const lines = r.stdout.trim().split('\n')
    assert.equal(lines[0], '4')
    assert.match(lines[1], /^3\.\d+\.\d+ /)
    assert.match(lines.at(-1), /^id=[0-9a-f-]{36}$/)
    // In a command substitution create is silent on stderr.
    assert.doesNotMatch(r.stderr, /sandbox ready/)
  })

  test('the SDK lifecycle mirrors the CLI', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await iii.trigger({
      function_id: 'sandbox::create',
      payload: { image: 'python', idle_timeout_secs: 300 },
      timeoutMs: 300_000,
    })
    const a = await iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'python3', args: ['-c', 'print(2+2)'] },
      timeoutMs: 35_000,
    })
    const b = await iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'python3', args: ['-c', 'import sys; print(sys.version)'] },
      timeoutMs: 35_000,
    })
    await iii.trigger({
      function_id: 'sandbox::stop',
      payload: { sandbox_id, wait: true },
    })

    assert.equal(a.stdout, '4\n')
    assert.equal(a.exit_code, 0)
    assert.equal(a.success, true)
    assert.match(b.stdout, /^3\.\d+\.\d+ /)
  })
})

describe('SDK: creating a sandbox and running commands', () => {
  test('create with limits and env, exec with exec-time env', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const logged = mock.method(console, 'log', () => {})
    try {
      const { sandbox_id } = await iii.trigger({
        function_id: 'sandbox::create',
        payload: {
          image: 'python',
          cpus: 2,
          memory_mb: 512,
          env: ['LANG=en_US.UTF-8'],
        },
        timeoutMs: 300_000,
      })

      const info = await http('GET', `/v1/sandboxes/${sandbox_id}`)
      assert.equal(info.cpus, 2)
      assert.equal(info.memory_mb, 512)
      assert.equal(info.image, 'python')

      const out = await iii.trigger({
        function_id: 'sandbox::exec',
        payload: {
          sandbox_id,
          cmd: '/usr/bin/env',
          args: ['printenv', 'LANG'],
          timeout_ms: 10_000,
          env: ['REQUEST_ID=req-42'],
        },
        timeoutMs: 35_000,
      })
      if (out.success) console.log(out.stdout.trim())
      await iii.trigger({
        function_id: 'sandbox::stop',
        payload: { sandbox_id, wait: true },
      })

      assert.deepEqual(logged.mock.calls.map((c) => c.arguments), [['en_US.UTF-8']])
      // The output shape of seed 000's table.
      assert.equal(typeof out.stdout, 'string')
      assert.equal(typeof out.stderr, 'string')
      assert.equal(out.exit_code, 0)
      assert.equal(out.timed_out, false)
      assert.equal(typeof out.duration_ms, 'number')
      assert.equal(out.success, true)
    } finally {
      logged.mock.restore()
    }
  })
})

describe('SDK: one-shot and listing', () => {
  test('one-shot (create, exec, stop)', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await iii.trigger({
      function_id: 'sandbox::create',
      payload: { image: 'python' },
      timeoutMs: 300_000,
    })
    const out = await iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'python3', args: ['-c', 'print(2 ** 10)'] },
      timeoutMs: 35_000,
    })
    // Best-effort stop — don't await if you only need the result
    await iii.trigger({
      function_id: 'sandbox::stop',
      payload: { sandbox_id, wait: false },
    }).catch(() => {})

    assert.equal(out.stdout, '1024\n')
  })

  test('sandbox::list', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const created = await iii.trigger({
      function_id: 'sandbox::create',
      payload: { image: 'node', name: 'listed' },
      timeoutMs: 300_000,
    })

    const { sandboxes } = await iii.trigger({
      function_id: 'sandbox::list',
      payload: {},
    })

    const mine = sandboxes.find((s) => s.sandbox_id === created.sandbox_id)
    assert.ok(mine, 'the new sandbox is listed')
    assert.equal(mine.name, 'listed')
    assert.equal(mine.image, 'node')
    assert.equal(typeof mine.age_secs, 'number')
    assert.equal(mine.exec_in_progress, false)
    assert.equal(mine.stopped, false)
    await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id: created.sandbox_id, wait: true } })
  })
})

describe('Environment variables', () => {
  test('create-time env is the base, exec-time env layers on top for one call', { timeout: BOOT_TIMEOUT_MS }, async () => {
    process.env.DATABASE_URL = 'postgres://db.internal:5432/app'
    const { sandbox_id } = await iii.trigger({
      function_id: 'sandbox::create',
      payload: {
        image: 'python',
        env: [
          `DATABASE_URL=${process.env.DATABASE_URL}`,
          'LANG=en_US.UTF-8',
        ],
      },
      timeoutMs: 300_000,
    })

    // Inherits DATABASE_URL and LANG.
    const inherited = await iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'python3', args: ['-c', 'import os; print(os.environ["LANG"])'] },
      timeoutMs: 35_000,
    })

    // Layers REQUEST_ID on top for this call only.
    const layered = await iii.trigger({
      function_id: 'sandbox::exec',
      payload: {
        sandbox_id,
        cmd: 'python3',
        args: ['-c', 'import os; print(os.environ["REQUEST_ID"])'],
        env: ['REQUEST_ID=req-42'],
      },
      timeoutMs: 35_000,
    })

    assert.equal(inherited.stdout, 'en_US.UTF-8\n')
    assert.equal(layered.stdout, 'req-42\n')

    const printenv = (env) => iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'python3', args: ['-c', 'import os; print(os.environ.get("DATABASE_URL"), os.environ.get("LANG"), os.environ.get("REQUEST_ID"))'], env },
      timeoutMs: 35_000,
    })
    // Exec-time wins for that call only; create-time stays the base.
    assert.equal((await printenv(['LANG=C.UTF-8'])).stdout, 'postgres://db.internal:5432/app C.UTF-8 None\n')
    assert.equal((await printenv([])).stdout, 'postgres://db.internal:5432/app en_US.UTF-8 None\n')
    // No unset verb: overwrite with an empty string.
    assert.equal((await printenv(['DATABASE_URL='])).stdout, ' en_US.UTF-8 None\n')

    await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id, wait: true } })
  })
})

describe('Error handling', () => {
  test('an exec timeout arrives as S200 in a handler error', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const warned = mock.method(console, 'warn', () => {})
    const errored = mock.method(console, 'error', () => {})
    try {
      try {
        const { sandbox_id } = await iii.trigger({
          function_id: 'sandbox::create',
          payload: { image: 'python' },
          timeoutMs: 300_000,
        })
        await iii.trigger({
          function_id: 'sandbox::exec',
          payload: { sandbox_id, cmd: 'python3', args: ['-c', 'while True: pass'], timeout_ms: 500 },
          timeoutMs: 35_000,
        })
      } catch (err) {
        const match = err?.message?.match(/handler error:\s*(\{.*\})/)
        const envelope = match ? JSON.parse(match[1]) : null
        if (envelope?.code === 'S200') {
          console.warn('timed out; raise timeout_ms or split the work')
        } else if (envelope?.code === 'S101') {
          console.error('pre-pull with: iii worker add iiidev/<image>')
        } else {
          throw err
        }
      }
      assert.deepEqual(warned.mock.calls.map((c) => c.arguments), [['timed out; raise timeout_ms or split the work']])
      assert.equal(errored.mock.callCount(), 0)
    } finally {
      warned.mock.restore()
      errored.mock.restore()
    }
  })

  test('the envelope has the documented fields', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'python' }, timeoutMs: 300_000 })
    // The loop never ends: only the exec's own 500 ms timeout (S200, not
    // the trigger's 35 s) ends this call.
    const err = await iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'python3', args: ['-c', 'while True: pass'], timeout_ms: 500 },
      timeoutMs: 35_000,
    }).then(() => null, (e) => e)
    assert.ok(err, 'the exec did not fail')
    assert.equal(err.code, 'invocation_failed')
    assert.match(err.message, /^invocation_failed: handler error: \{/)
    const env = envelopeOf(err)
    assert.equal(env.type, 'execution')
    assert.equal(env.code, 'S200')
    assert.equal(env.message, 'exec timed out after 500ms')
    assert.equal(env.retryable, false)
    assert.match(env.docs_url, /#s200$/)

    // The sandbox survives a timed-out exec; a bad id is S002, a stopped one S004.
    const ok = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id, cmd: 'true' }, timeoutMs: 35_000 })
    assert.equal(ok.success, true)
    await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id, wait: true } })
    const stopped = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id, cmd: 'true' } }).catch((e) => e)
    assert.equal(envelopeOf(stopped)?.code, 'S004')
    const unknown = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id: '00000000-0000-4000-8000-000000000000', cmd: 'true' } }).catch((e) => e)
    assert.deepEqual([envelopeOf(unknown)?.type, envelopeOf(unknown)?.code], ['validation', 'S002'])
    const malformed = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id: 'not-a-uuid', cmd: 'true' } }).catch((e) => e)
    assert.equal(envelopeOf(malformed)?.code, 'S001')
    const notAllowed = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'ghcr.io/iii-hq/node:latest' } }).catch((e) => e)
    assert.deepEqual([envelopeOf(notAllowed)?.type, envelopeOf(notAllowed)?.code], ['config', 'S100'])
    assert.match(envelopeOf(notAllowed).message, /python, node/)
  })
})

describe('CLI reference', () => {
  test('hutch run with flags', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const r = await sh(`hutch run python --cpus 2 --memory 512 -- python3 -c 'print(2 ** 10)'`)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, '1024\n')
  })

  test('create with every flag, exec with --timeout, list, stop', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const r = await sh(`
SB=$(hutch create python --cpus 1 --memory 256 --idle-timeout 60 --name cli-ref -e KEY=VAL -e skipped)
hutch exec "$SB" -e EXTRA=1 -- python3 -c 'import os; print(os.environ["KEY"], os.environ["EXTRA"], "skipped" in os.environ)'
set +e
hutch exec "$SB" --timeout 500ms -- sleep 10
echo "timeout status $?"
set -e
hutch list | grep -c cli-ref
hutch stop "$SB"
`)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^VAL 1 False\ntimeout status 124\n1\n[0-9a-f-]{36}\n$/)
  })
})

describe('Testing', () => {
  // The seed's mock uses vitest's vi.fn; node:test's mock.fn stands in.
  const vi = {
    fn: () => {
      const f = mock.fn()
      f.mockImplementation = (impl) => { f.mock.mockImplementation(impl); return f }
      return f
    },
  }

  test('mocking iii.trigger; the mocked shapes are the real ones', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const mockIii = {
      trigger: vi.fn().mockImplementation(async ({ function_id, payload }) => {
        if (function_id === 'sandbox::create') return { sandbox_id: 'test-sb-uuid' }
        if (function_id === 'sandbox::exec') return { stdout: 'hi\n', stderr: '', exit_code: 0, success: true, timed_out: false, duration_ms: 5 }
        if (function_id === 'sandbox::stop') return {}
        throw new Error(`unexpected function_id: ${function_id}`)
      }),
    }
    const mocked = await mockIii.trigger({ function_id: 'sandbox::exec', payload: {} })
    await assert.rejects(mockIii.trigger({ function_id: 'sandbox::nope', payload: {} }), /unexpected function_id/)
    assert.equal(mockIii.trigger.mock.callCount(), 2)

    // Code tested against the mock works against hutch: same fields, same types.
    const { sandbox_id } = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'python' }, timeoutMs: 300_000 })
    const real = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id, cmd: 'echo', args: ['hi'] }, timeoutMs: 35_000 })
    await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id, wait: true } })
    for (const [k, v] of Object.entries(mocked)) {
      assert.equal(typeof real[k], typeof v, `field ${k}`)
    }
    assert.equal(real.stdout, mocked.stdout)
  })
})
