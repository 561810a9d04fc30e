// The engine protocol through the real iii-sdk, beyond the seeds' samples:
// many calls in flight on one connection, fire-and-forget, engine-level
// errors, a create's runtime, stream channels, and sandbox::run's fields.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { TriggerAction } from 'iii-sdk'
import { ChannelReader } from 'iii-sdk/channel'
import { createChannel } from 'iii-sdk/helpers'
import { BOOT_TIMEOUT_MS, III_URL, closeEngine, engine, envelopeOf, http } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const create = async (payload = { image: 'python' }) =>
  (await iii.trigger({ function_id: 'sandbox::create', payload, timeoutMs: BOOT_TIMEOUT_MS })).sandbox_id

describe('protocol', () => {
  test('calls on one connection run at once and answer as they finish', { timeout: BOOT_TIMEOUT_MS }, async () => {
    // The long calls start first and wait for a file the test writes once
    // both short ones have answered: the order is the test's, not the
    // scheduler's, and calls that did not overlap would never finish.
    const ids = await Promise.all([create(), create()])
    const order = []
    const exec = (sandbox_id, name, script) => iii.trigger({
      function_id: 'sandbox::exec',
      payload: { sandbox_id, cmd: 'sh', args: ['-c', `${script}echo ${name}`], timeout_ms: 120_000 },
      timeoutMs: 150_000,
    }).then((r) => { order.push(r.stdout.trim()); return r })
    const long = ids.map((sandbox_id, i) => exec(sandbox_id, `${i}-long`, 'until [ -e /tmp/release ]; do sleep 0.05; done; '))
    await Promise.all(ids.map((sandbox_id, i) => exec(sandbox_id, `${i}-short`, '')))
    assert.deepEqual(new Set(order), new Set(['0-short', '1-short']))
    await Promise.all(ids.map((sandbox_id) =>
      iii.trigger({ function_id: 'sandbox::fs::write', payload: { sandbox_id, path: '/tmp/release', content: '' } })))
    await Promise.all(long)
    assert.deepEqual(new Set(order.slice(2)), new Set(['0-long', '1-long']))
    await Promise.all(ids.map((sandbox_id) => iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id, wait: true } })))
  })

  test('fire-and-forget (action void) runs without a reply', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const sandbox_id = await create()
    const r = await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id }, action: TriggerAction.Void() })
    assert.equal(r, undefined)
    for (let i = 0; ; i++) {
      const info = await http('GET', `/v1/sandboxes/${sandbox_id}`)
      if (info.stopped) break
      assert.ok(i < 1200, 'the void stop did not happen within a minute')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })

  test('engine-level errors', async () => {
    const err = await iii.trigger({ function_id: 'sandbox::nope', payload: {} }).catch((e) => e)
    assert.equal(err.name, 'InvocationError')
    assert.equal(err.code, 'function_not_found')
    assert.equal(envelopeOf(err), null, 'function_not_found is not a handler error')

    const enq = await iii.trigger({ function_id: 'sandbox::list', payload: {}, action: TriggerAction.Enqueue({ queue: 'jobs' }) }).catch((e) => e)
    assert.equal(enq.code, 'enqueue_error')

    const bad = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'python', bogus: true } }).catch((e) => e)
    assert.equal(bad.code, 'invocation_failed')
    assert.equal(envelopeOf(bad).code, 'S001')
    assert.match(envelopeOf(bad).message, /unknown field "bogus"/)
  })

  test('a create names its runtime; the catalog lists them', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const cat = await iii.trigger({ function_id: 'sandbox::catalog::list', payload: {} })
    const def = cat.runtimes.find((r) => r.default)
    assert.ok(def?.available, JSON.stringify(cat.runtimes))
    const made = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'python', runtime: def.name }, timeoutMs: BOOT_TIMEOUT_MS })
    assert.equal(made.runtime, def.name)
    assert.equal((await http('GET', `/v1/sandboxes/${made.sandbox_id}`)).runtime, def.name)
    await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id: made.sandbox_id, wait: true } })

    const bad = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'python', runtime: 'nope' } }).catch((e) => e)
    assert.equal(envelopeOf(bad)?.code, 'S001')
    assert.match(envelopeOf(bad).message, /unknown runtime "nope"/)
  })

  test('a stream channel relays bytes between two clients', async () => {
    const { writer, reader } = await createChannel(iii)
    const data = Buffer.alloc(1 << 20, 7)
    const got = reader.readAll()
    writer.stream.end(data)
    assert.ok((await got).equals(data))
  })
})

describe('file bodies as streams', () => {
  test('sandbox::fs::write from a channel, sandbox::fs::read into one', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const sandbox_id = await create()
    const data = randomBytes(3 << 20)
    const { writer, readerRef } = await createChannel(iii)
    const written = iii.trigger({
      function_id: 'sandbox::fs::write',
      payload: { sandbox_id, path: '/data/big.bin', parents: true, content: readerRef },
      timeoutMs: 60_000,
    })
    writer.stream.end(data)
    assert.deepEqual(await written, { bytes_written: data.length, path: '/data/big.bin' })

    const sum = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id, cmd: 'sha256sum', args: ['/data/big.bin'] } })
    assert.equal(sum.stdout.split(' ')[0], createHash('sha256').update(data).digest('hex'))

    const read = await iii.trigger({ function_id: 'sandbox::fs::read', payload: { sandbox_id, path: '/data/big.bin' } })
    assert.equal(read.size, data.length)
    assert.equal(read.body, undefined, 'no inline body over 1 MiB')
    assert.equal(read.content.direction, 'read')
    const got = await new ChannelReader(III_URL, read.content).readAll()
    assert.ok(got.equals(data), `streamed ${got.length} bytes back`)

    // A small text file has both the body and the stream.
    await iii.trigger({ function_id: 'sandbox::fs::write', payload: { sandbox_id, path: '/data/small.txt', content: 'hello\n' } })
    const small = await iii.trigger({ function_id: 'sandbox::fs::read', payload: { sandbox_id, path: '/data/small.txt' } })
    assert.equal(small.body, 'hello\n')
    assert.equal((await new ChannelReader(III_URL, small.content).readAll()).toString(), 'hello\n')
    await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id, wait: true } })
  })
})

describe('a stream cut off', () => {
  test('tells an iii-sdk ChannelReader through onMessage, and comes up short of size', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const sandbox_id = await create()
    const size = 256 << 20
    const made = await iii.trigger({ function_id: 'sandbox::exec', payload: { sandbox_id, cmd: 'sh', args: ['-c', `head -c ${size} /dev/zero > /tmp/big`], timeout_ms: 300_000 }, timeoutMs: 310_000 })
    assert.equal(made.exit_code, 0)
    const read = await iii.trigger({ function_id: 'sandbox::fs::read', payload: { sandbox_id, path: '/tmp/big' } })
    assert.equal(read.size, size)
    const reader = new ChannelReader(III_URL, read.content)
    const messages = []
    reader.onMessage((m) => messages.push(JSON.parse(m)))
    // Take the first chunk, stop the sandbox, then read on to the end.
    let got = 0
    let stopped = false
    for await (const chunk of reader.stream) {
      got += chunk.length
      if (!stopped) {
        stopped = true
        reader.stream.pause()
        await iii.trigger({ function_id: 'sandbox::stop', payload: { sandbox_id, wait: true } })
        reader.stream.resume()
      }
    }
    assert.ok(got < size, `read ${got} of ${size} bytes after the stop`)
    assert.equal(messages.length, 1, JSON.stringify(messages))
    assert.equal(messages[0].type, 'stream_error')
    assert.equal(messages[0].error.code, 'S218')
  })
})

describe('sandbox::run', () => {
  test('files, env, stdin, and the sandbox is stopped afterwards', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const before = (await http('GET', '/v1/sandboxes')).sandboxes.length
    const out = await iii.trigger({
      function_id: 'sandbox::run',
      payload: {
        image: 'python',
        lang: 'py',
        code: 'import sys\nsys.path.insert(0, "/work")\nimport helper, os\nprint(helper.VALUE, os.environ["MODE"], sys.stdin.read())',
        files: [{ path: '/work/helper.py', content: 'VALUE = 41 + 1\n' }],
        env: { MODE: 'test' },
        stdin: Buffer.from('from stdin').toString('base64'),
        timeout_ms: 20_000,
      },
      timeoutMs: BOOT_TIMEOUT_MS,
    })
    assert.equal(out.stdout, '42 test from stdin\n')
    assert.equal(out.success, true)
    assert.equal(out.sandbox_id, undefined)
    const { sandboxes } = await http('GET', '/v1/sandboxes')
    assert.equal(sandboxes.length, before + 1)
    assert.ok(sandboxes.at(-1).stopped, 'the run sandbox is stopped')
  })

  test('a nonzero exit is a result; a timeout is S200 with the step in the fix', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const failed = await iii.trigger({
      function_id: 'sandbox::run',
      payload: { image: 'node', lang: 'javascript', code: 'console.error("bad"); process.exit(2)' },
      timeoutMs: BOOT_TIMEOUT_MS,
    })
    assert.deepEqual([failed.exit_code, failed.success, failed.stderr], [2, false, 'bad\n'])

    const err = await iii.trigger({
      function_id: 'sandbox::run',
      payload: { image: 'python', lang: 'shell', code: 'sleep 30', timeout_ms: 300 },
      timeoutMs: BOOT_TIMEOUT_MS,
    }).catch((e) => e)
    const env = envelopeOf(err)
    assert.equal(env.code, 'S200')
    assert.equal(env.fix.context, 'during sandbox::run step exec')
    assert.equal(env.fix.inner_code, 'S200')
    assert.match(env.fix.sandbox_id, /^[0-9a-f-]{36}$/)
    const info = await http('GET', `/v1/sandboxes/${env.fix.sandbox_id}`)
    assert.equal(info.stopped, true)
  })

  test('a failing create step carries its inner code', async () => {
    const err = await iii.trigger({
      function_id: 'sandbox::run',
      payload: { image: 'ruby', lang: 'ruby', code: 'puts 1' },
    }).catch((e) => e)
    const env = envelopeOf(err)
    assert.equal(env.code, 'S100')
    assert.deepEqual(env.fix, { context: 'during sandbox::run step create', inner_code: 'S100' })
  })

  test('bad input creates nothing', async () => {
    const before = (await http('GET', '/v1/sandboxes')).sandboxes.length
    for (const payload of [
      { image: 'python', code: 'print(1)' },
      { image: 'python', lang: 'python' },
      { image: 'python', lang: 'python', code: 'x', files: [{ path: 'relative.py', content: '' }] },
      { image: 'python', lang: 'python', code: 'x', stdin: 'not base64!' },
    ]) {
      const err = await iii.trigger({ function_id: 'sandbox::run', payload }).catch((e) => e)
      assert.equal(envelopeOf(err)?.code, 'S001', JSON.stringify(payload))
    }
    assert.equal((await http('GET', '/v1/sandboxes')).sandboxes.length, before)
  })
})
