// E2B's envd contract through the real `e2b` SDK from npm: commands,
// background processes, terminals and files of a sandbox that hutch's E2B
// transport serves. run.sh points the SDK at the daemon with E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY. Nothing here waits for a duration: each
// step waits for what the one before produced (an event, a file, an exit).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { BOOT_TIMEOUT_MS } from '../lib.mjs'
import { CommandExitError, FileType, NotFoundError, Sandbox, TimeoutError } from 'e2b'

let sbx
before(async () => { sbx = await Sandbox.create({ timeoutMs: 600_000 }) }, { timeout: BOOT_TIMEOUT_MS })
after(async () => { await sbx?.kill() })

// until resolves once cond() holds, checking it after each of the events
// that on() (a registration of a callback) reports.
function until (cond) {
  let resolve
  const done = new Promise((r) => { resolve = r })
  return { check: () => { if (cond()) resolve() }, done }
}

describe('e2b commands', () => {
  test('run: output, env, cwd, user', async () => {
    const r = await sbx.commands.run('echo "$GREETING from $(pwd) as $(id -un)"; echo warn >&2', {
      envs: { GREETING: 'hello' }, cwd: '/tmp', user: 'root'
    })
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'hello from /tmp as root\n')
    assert.equal(r.stderr, 'warn\n')
  })

  test('run: a non-zero exit is a CommandExitError', async () => {
    await assert.rejects(sbx.commands.run('echo out; echo bad >&2; exit 7'), (err) => {
      assert.ok(err instanceof CommandExitError)
      assert.equal(err.exitCode, 7)
      assert.equal(err.stdout, 'out\n')
      assert.equal(err.stderr, 'bad\n')
      return true
    })
  })

  test('run: timeoutMs ends the command', async () => {
    await assert.rejects(sbx.commands.run('sleep 600', { timeoutMs: 1000 }), TimeoutError)
  })

  test('background: list, sendStdin, wait, kill', async () => {
    const reader = await sbx.commands.run('read line; echo "got $line"', { background: true, stdin: true })
    const sleeper = await sbx.commands.run('sleep 600', { background: true })
    const pids = (await sbx.commands.list()).map((p) => p.pid)
    assert.ok(pids.includes(reader.pid) && pids.includes(sleeper.pid), `${pids} lacks ${reader.pid} or ${sleeper.pid}`)

    await sbx.commands.sendStdin(reader.pid, 'hi\n')
    const r = await reader.wait()
    assert.equal(r.stdout, 'got hi\n')

    assert.equal(await sleeper.kill(), true)
    await assert.rejects(sleeper.wait(), CommandExitError)
    assert.equal(await sbx.commands.kill(sleeper.pid), false)
  })

  test('connect: re-attach to a running command by pid', async () => {
    const first = await sbx.commands.run('read line; echo "again $line"', { background: true, stdin: true })
    await first.disconnect()
    const again = await sbx.commands.connect(first.pid)
    assert.equal(again.pid, first.pid)
    await sbx.commands.sendStdin(first.pid, 'there\n')
    const r = await again.wait()
    assert.equal(r.stdout, 'again there\n')
  })
})

describe('e2b pty', () => {
  test('create, resize, sendInput', async () => {
    let out = ''
    const seen = until(() => out.includes('30 100'))
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d); seen.check() } })
    await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size\n'))
    await seen.done
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('exit\n'))
    const r = await term.wait()
    assert.equal(r.exitCode, 0)
  })
})

describe('e2b files', () => {
  const dir = '/tmp/e2b-files'

  test('write and read: text, bytes, streams, several files', async () => {
    const info = await sbx.files.write(`${dir}/a.txt`, 'alpha')
    assert.equal(info.path, `${dir}/a.txt`)
    assert.equal(await sbx.files.read(`${dir}/a.txt`), 'alpha')

    const bytes = new Uint8Array([0, 1, 2, 255])
    await sbx.files.write(`${dir}/b.bin`, bytes)
    assert.deepEqual(await sbx.files.read(`${dir}/b.bin`, { format: 'bytes' }), bytes)

    const stream = new ReadableStream({ start (c) { c.enqueue(new TextEncoder().encode('streamed')); c.close() } })
    await sbx.files.write(`${dir}/c.txt`, stream)
    const chunks = []
    for await (const chunk of await sbx.files.read(`${dir}/c.txt`, { format: 'stream' })) chunks.push(Buffer.from(chunk))
    assert.equal(Buffer.concat(chunks).toString(), 'streamed')

    const many = await sbx.files.write([
      { path: `${dir}/deep/one.txt`, data: 'one' },
      { path: `${dir}/deep/er/two.txt`, data: 'two' }
    ])
    assert.deepEqual(many.map((f) => f.path).sort(), [`${dir}/deep/er/two.txt`, `${dir}/deep/one.txt`])
    assert.equal(await sbx.files.read(`${dir}/deep/er/two.txt`), 'two')

    await assert.rejects(sbx.files.read(`${dir}/missing`), NotFoundError)
  })

  test('list with depth, exists, getInfo, rename, remove, makeDir', async () => {
    await sbx.files.write(`${dir}/tree/x/y/z.txt`, 'z')
    const names = async (depth) => (await sbx.files.list(`${dir}/tree`, { depth })).map((e) => e.path).sort()
    assert.deepEqual(await names(1), [`${dir}/tree/x`])
    assert.deepEqual(await names(3), [`${dir}/tree/x`, `${dir}/tree/x/y`, `${dir}/tree/x/y/z.txt`])

    assert.equal(await sbx.files.exists(`${dir}/tree/x/y/z.txt`), true)
    assert.equal(await sbx.files.exists(`${dir}/tree/nope`), false)
    const info = await sbx.files.getInfo(`${dir}/tree/x/y/z.txt`)
    assert.equal(info.type, FileType.FILE)
    assert.equal(info.size, 1)
    assert.equal(info.name, 'z.txt')

    const moved = await sbx.files.rename(`${dir}/tree/x/y/z.txt`, `${dir}/tree/moved.txt`)
    assert.equal(moved.path, `${dir}/tree/moved.txt`)
    assert.equal(await sbx.files.exists(`${dir}/tree/x/y/z.txt`), false)

    await sbx.files.remove(`${dir}/tree/x`)
    assert.equal(await sbx.files.exists(`${dir}/tree/x`), false)

    assert.equal(await sbx.files.makeDir(`${dir}/made/deeper`), true)
    assert.equal(await sbx.files.makeDir(`${dir}/made/deeper`), false)
    assert.equal((await sbx.files.getInfo(`${dir}/made/deeper`)).type, FileType.DIR)
  })

  test('watchDir reports a new file', async () => {
    await sbx.files.makeDir(`${dir}/watched`)
    const names = []
    const seen = until(() => names.includes('new.txt'))
    const handle = await sbx.files.watchDir(`${dir}/watched`, (ev) => {
      if (ev.type === 'create' || ev.type === 'write') names.push(ev.name)
      seen.check()
    })
    await sbx.files.write(`${dir}/watched/new.txt`, 'n')
    await seen.done
    await handle.stop()
  })
})
