// @hutch/sdk against a real daemon ($HUTCH_URL).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { DownloadTooLargeError, Hutch, HutchError, Sandbox, asyncDispose } from '../src/index.js'

const hutch = new Hutch()
let sb

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// check()'s first truthy value; a failure after tries (generous: no test
// asserts a duration).
async function until (check, what, tries = 300) {
  for (let i = 0; i < tries; i++) {
    const got = await check()
    if (got) return got
    await sleep(100)
  }
  assert.fail(`gave up waiting for ${what}`)
}

// Whether name resolves inside sandbox box.
async function resolves (box, name) {
  return (await box.exec(['python3', '-c', 'import socket, sys; socket.gethostbyname(sys.argv[1])', name])).exitCode === 0
}

// A web server for the sandbox's loopback that logs each request's
// Authorization header to /tmp/ts-auth.log and answers 404.
const AUTH_LOGGER = `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open("/tmp/ts-auth.log", "a") as f:
            f.write(self.headers.get("Authorization", "-") + "\\n")
        self.send_response(404)
        self.end_headers()
http.server.HTTPServer(("127.0.0.1", 8766), H).serve_forever()
`

before(async () => { sb = await hutch.create('python') }, { timeout: 300_000 })
after(async () => { await sb?.stop() })

describe('@hutch/sdk', () => {
  test('exec, buffered and streamed', async () => {
    const res = await sb.exec(['sh', '-c', 'echo out; echo err >&2; exit 3'])
    assert.deepEqual([res.stdout, res.stderr, res.exitCode], ['out\n', 'err\n', 3])
    assert.equal((await sb.exec(['cat'], { stdin: 'piped' })).stdout, 'piped')
    const late = await sb.exec(['sleep', '100'], { timeoutMs: 300 })
    assert.deepEqual([late.timedOut, late.exitCode, late.timeoutMs], [true, null, 300])
    // Over the daemon's max_exec_timeout_ms (at most a day) is refused.
    await assert.rejects(sb.exec(['true'], { timeoutMs: 24 * 3600 * 1000 + 1 }),
      (e) => e instanceof HutchError && e.code === 'S001' && e.message.includes('max_exec_timeout_ms'))
    const stream = sb.execStream(['sh', '-c', 'echo one; echo two >&2'])
    const { events, result } = await stream.collect()
    assert.ok(events.some((e) => e.type === 'stdout' && e.data.data === 'one\n'))
    assert.ok(events.some((e) => e.type === 'stderr' && e.data.data === 'two\n'))
    assert.equal(result.exit_code, 0)
  })

  test('files, with streamed upload and download', async () => {
    await sb.files.write('/tmp/ts/a.txt', 'hello')
    assert.equal(await sb.files.readText('/tmp/ts/a.txt'), 'hello')
    await sb.files.write('/tmp/ts/b.bin', Uint8Array.of(0, 255))
    assert.deepEqual([...await sb.files.read('/tmp/ts/b.bin')], [0, 255])
    assert.deepEqual((await sb.files.list('/tmp/ts')).map((e) => e.name).sort(), ['a.txt', 'b.bin'])
    const big = randomBytes(3 << 20)
    await sb.files.upload('/tmp/ts/big', new Blob([big]).stream())
    const chunks = []
    for await (const c of await sb.files.download('/tmp/ts/big')) chunks.push(c)
    assert.ok(Buffer.concat(chunks).equals(big))
    // Downloads are bounded: past maxBytes nothing more comes.
    await assert.rejects(async () => { for await (const c of await sb.files.download('/tmp/ts/big', { maxBytes: 1 << 20 })) assert.ok(c) },
      (e) => e instanceof DownloadTooLargeError && e.limit === 1 << 20 && /maxBytes/.test(e.message))
    const whole = []
    for await (const c of await sb.files.download('/tmp/ts/big', { maxBytes: 3 << 20 })) whole.push(c)
    assert.ok(Buffer.concat(whole).equals(big))
    await assert.rejects(sb.files.read('/tmp/ts/missing'), (e) => e instanceof HutchError && e.code === 'S211' && e.status === 404)
  })

  test('processes', async () => {
    const pid = await sb.processes.start(['sh', '-c', 'echo started; read l; echo got $l'], { tag: 'ts', stdin: true })
    await sb.processes.writeStdin(pid, 'x\n', { close: true })
    let out = ''
    for await (const e of sb.processes.follow(pid)) if (e.type === 'stdout') out += e.data.data
    assert.equal(out, 'started\ngot x\n')
    assert.equal((await sb.processes.get(pid)).exit_code, 0)
  })

  test('a port exposed answers at its preview URL', async () => {
    const pid = await sb.processes.start(['python3', '-m', 'http.server', '8001', '--bind', '127.0.0.1', '--directory', '/etc'])
    const url = await sb.ports.expose(8001)
    let res
    for (let i = 0; i < 100; i++) {
      res = await fetch(url + 'hostname').catch(() => undefined)
      if (res?.ok) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(res?.status, 200)
    assert.deepEqual((await sb.ports.list()).map((p) => p.port), [8001])
    await sb.ports.unexpose(8001)
    await sb.processes.kill(pid)
  })

  test('the interpreter keeps its state', async () => {
    await sb.code.run('x = 41')
    const printed = []
    const res = await sb.code.run("print('hi')\nx + 1", { onOutput: (e) => printed.push(e.data.data) })
    assert.equal(res.data['text/plain'], '42')
    assert.equal(printed.join(''), 'hi\n')
    assert.equal((await sb.code.run('1/0')).error.name, 'ZeroDivisionError')
  })

  test('files as another user of the image', async () => {
    await sb.files.write('/tmp/ts-user/mine.txt', 'x', { user: 'nobody' })
    assert.equal((await sb.exec(['stat', '-c', '%U', '/tmp/ts-user/mine.txt'])).stdout, 'nobody\n')
    await sb.files.upload('/tmp/ts-user/up.bin', Uint8Array.of(1), { user: 'nobody' })
    assert.equal((await sb.exec(['stat', '-c', '%U', '/tmp/ts-user/up.bin'])).stdout, 'nobody\n')
    await sb.files.write('/tmp/ts-user/secret', 'root only', { mode: '0600' })
    assert.equal(await sb.files.readText('/tmp/ts-user/secret'), 'root only')
    const refused = (e) => e instanceof HutchError && e.code === 'S215'
    await assert.rejects(sb.files.read('/tmp/ts-user/secret', { user: 'nobody' }), refused)
    await assert.rejects(sb.files.download('/tmp/ts-user/secret', { user: 'nobody' }), refused)
    assert.deepEqual((await sb.files.list('/tmp/ts-user', { user: 'nobody' })).map((e) => e.name).sort(), ['mine.txt', 'secret', 'up.bin'])
    await assert.rejects(async () => {
      for await (const e of sb.files.watch('/tmp/ts-user', { user: 'no-such-user' })) void e
    }, (e) => e instanceof HutchError && e.code === 'S001')
  })

  test('watching files: events until the loop ends', async () => {
    await sb.files.mkdir('/tmp/ts-watched/sub')
    const target = '/tmp/ts-watched/sub/new.txt'
    let seen = false
    let toucher
    const watch = sb.files.watch('/tmp/ts-watched', { recursive: true })
    const types = []
    for await (const e of watch) {
      types.push(e.type)
      if (e.type === 'open') {
        // Until the change is seen: the test does not count on one write
        // arriving after the watch is in place.
        toucher = (async () => {
          while (!seen) { await sb.exec(['touch', target]); await sleep(500) }
        })()
      }
      if (e.type === 'change' && e.data.path === target) {
        assert.ok(['create', 'chmod', 'write'].includes(e.data.type))
        break
      }
    }
    seen = true
    await toucher
    assert.equal(types[0], 'open')
    assert.equal(watch.result, undefined)

    // close() from outside ends a loop that waits for changes, without an error.
    const quiet = sb.files.watch('/tmp/ts-watched')
    const events = []
    for await (const e of quiet) {
      events.push(e.type)
      if (e.type === 'open') setTimeout(() => quiet.close(), 100)
    }
    assert.deepEqual(events, ['open'])
    await assert.rejects(async () => {
      for await (const e of sb.files.watch('/tmp/ts-watched/missing')) void e
    }, (e) => e.code === 'S211')
  })

  test('the sandbox environment', async () => {
    let after = await sb.env.set({ TS_A: '1', TS_B: 'two words' })
    assert.deepEqual([after.env.TS_A, after.env.TS_B], ['1', 'two words'])
    assert.ok('PATH' in after.effective)
    assert.equal(await sb.env.get('TS_B'), 'two words')
    assert.equal((await sb.exec(['sh', '-c', 'echo "$TS_A $TS_B"'])).stdout, '1 two words\n')
    assert.equal((await sb.env.list()).env.TS_A, '1')
    after = await sb.env.delete('TS_A', 'TS_B')
    assert.equal(after.env.TS_A, undefined)
    assert.equal(await sb.env.get('TS_A'), undefined)
    assert.equal((await sb.exec(['sh', '-c', 'echo "${TS_A-unset}"'])).stdout, 'unset\n')
  })

  test('git: init, status, add, commit, diff, log, config, errors', async () => {
    const repo = '/tmp/ts-repo'
    assert.equal((await sb.git.init(repo, { initialBranch: 'main' })).path, repo)
    await sb.files.write(`${repo}/a.txt`, 'one\n')
    let st = await sb.git.status(repo)
    assert.equal(st.clean, false)
    assert.deepEqual(st.files.map((f) => [f.path, f.status]), [['a.txt', 'untracked']])
    st = await sb.git.add(repo)
    assert.deepEqual(st.files.map((f) => [f.path, f.staged]), [['a.txt', true]])
    const { commit } = await sb.git.commit(repo, 'first', { authorName: 'SDK', authorEmail: 'sdk@example.test' })
    assert.deepEqual([commit.subject, commit.author], ['first', 'SDK'])
    st = await sb.git.status(repo)
    assert.deepEqual([st.clean, st.branch, st.commit], [true, 'main', commit.hash])
    await sb.files.write(`${repo}/a.txt`, 'one\ntwo\n')
    const diff = await sb.git.diff(repo, { nameStatus: true })
    assert.match(diff.diff, /\+two/)
    assert.deepEqual(diff.files, [{ status: 'M', path: 'a.txt' }])
    await sb.git.config(repo, { key: 'user.name', value: 'Config Name' })
    await sb.git.config(repo, { key: 'user.email', value: 'config@example.test' })
    await sb.git.commit(repo, 'second', { all: true })
    const log = await sb.git.log(repo, { maxCount: 10 })
    assert.deepEqual(log.commits.map((c) => [c.subject, c.author]), [['second', 'Config Name'], ['first', 'SDK']])
    assert.equal((await sb.git.branch(repo)).current, 'main')
    await assert.rejects(sb.git.commit(repo, 'nothing'), (e) => e instanceof HutchError && e.code === 'S274')
    await assert.rejects(sb.git.status('/tmp'), (e) => e.code === 'S270')
  })

  test('git credentials go with one call', async () => {
    // A clone from a server on the sandbox's loopback that logs what it is
    // sent: the token goes as basic auth, in that call only.
    const pid = await sb.processes.start(['python3', '-c', AUTH_LOGGER])
    try {
      const log = await until(async () => {
        await sb.git.clone('http://127.0.0.1:8766/r.git', '/tmp/ts-cloned', { username: 'sdk', token: 't0ken' })
          .catch((e) => assert.ok(['S272', 'S275'].includes(e.code), e.message)) // 404, or S275 until it listens
        return (await sb.exec(['cat', '/tmp/ts-auth.log'])).stdout
      }, "the clone's request")
      assert.ok(log.includes('Basic ' + Buffer.from('sdk:t0ken').toString('base64')), log)
    } finally {
      await sb.processes.kill(pid)
    }
    assert.ok(!(await sb.exec(['sh', '-c', 'env; cat ~/.gitconfig 2>/dev/null'])).stdout.includes('t0ken'))
    // Credentials for another host are refused before git runs; a remote
    // given by name needs credentialsFor.
    await assert.rejects(sb.git.clone('http://127.0.0.1:8766/r.git', '/tmp/ts-other', { token: 't0ken', credentialsFor: 'github.com' }),
      (e) => e instanceof HutchError && e.code === 'S271')
    await sb.git.init('/tmp/ts-named')
    await assert.rejects(sb.git.fetch('/tmp/ts-named', { token: 't0ken' }), (e) => e.code === 'S001')
  })

  test('snapshot, and a sandbox disposed of', async () => {
    // What `await using scoped = ...` does where the syntax exists (Node 22+).
    const scoped = await Sandbox.create('python', {}, hutch)
    const id = scoped.id
    try {
      const snap = await scoped.snapshot()
      assert.ok(snap.snapshot_id)
      await hutch.request('DELETE', `/v1/snapshots/${snap.snapshot_id}`)
    } finally {
      await scoped[asyncDispose]()
    }
    assert.equal((await hutch.connect(id)).id, id)
    assert.equal((await (await hutch.connect(id)).info()).stopped, true)
    await assert.rejects(hutch.connect('00000000-0000-0000-0000-000000000000'), (e) => e.code === 'S002')
  })
})

describe('terminal', () => {
  test('a shell on a PTY: typed input, its output, resize, exit code', async () => {
    const term = sb.pty({ cmd: 'sh' })
    let shown = ''
    term.ondata = (bytes) => { shown += new TextDecoder().decode(bytes) }
    await term.resize(100, 30)
    await term.write('stty size; echo done$((1+1)); exit 3\n')
    const code = await term.exited
    assert.match(shown, /30 100/)
    assert.match(shown, /done2/)
    assert.equal(code, 3)
  })
})

describe('networks', () => {
  const deniedNames = async (box) => new Set((await hutch.events({ sandbox_id: box.id, type: 'egress.denied' })).map((e) => e.data.name))

  test('an egress policy at create and replaced while it runs', async () => {
    const box = await hutch.create('python', { network: { deny_out: ['denied.example.test'] } })
    try {
      assert.deepEqual((await box.info()).egress, { deny_out: ['denied.example.test'] })
      assert.equal(await resolves(box, 'denied.example.test'), false)
      // hutch's resolver refused it (not merely an unknown name).
      await until(async () => (await deniedNames(box)).has('denied.example.test'), 'an egress.denied event')
      let res = await box.network.update({ deny_out: ['also-denied.example.test'] })
      assert.deepEqual(res.deny_out, ['also-denied.example.test'])
      assert.equal(await resolves(box, 'also-denied.example.test'), false)
      await until(async () => (await deniedNames(box)).has('also-denied.example.test'), 'an egress.denied event')
      res = await box.network.update({ allow_out: ['pypi.org'] })
      assert.deepEqual([res.allow_out, res.deny_out], [['pypi.org'], undefined])
      assert.equal((await box.network.update()).allow_out, undefined)
    } finally {
      await box.stop()
    }
    await assert.rejects(sb.network.update({ deny_out: ['example.test'] }), (e) => e instanceof HutchError && e.code === 'S252')
  })

  test('secrets: set, list without values, delete; an egress log', async () => {
    const value = `sk-${randomBytes(8).toString('hex')}`
    const info = await hutch.secrets.set('SDK_TS_KEY', value)
    assert.equal(info.placeholder, 'hutch-secret-placeholder-SDK_TS_KEY')
    const list = await hutch.secrets.list()
    assert.ok(list.some((s) => s.name === 'SDK_TS_KEY'))
    assert.ok(!JSON.stringify(list).includes(value))
    await hutch.secrets.delete('SDK_TS_KEY')
    await assert.rejects(hutch.secrets.delete('SDK_TS_KEY'), (e) => e instanceof HutchError && e.code === 'S280')
    const box = await hutch.create('python', { network: { allow_out: ['example.test'] } })
    try {
      assert.deepEqual(await hutch.secrets.egressLog(box), [])
    } finally {
      await box.stop()
    }
  })

  test('sandbox networks: create, connect, resolve, disconnect, delete', async () => {
    const name = 'sdk-ts-net'
    await hutch.networks.delete(name).catch((e) => assert.equal(e.code, 'S250'))
    const net = await hutch.networks.create(name)
    assert.deepEqual([net.name, net.members], [name, []])
    assert.ok((await hutch.networks.list()).some((n) => n.name === name))
    const web = await hutch.create('python', { network: true, name: 'sdk-ts-web' })
    const client = await hutch.create('python', { network: true })
    try {
      await hutch.networks.connect(name, web)
      let after = await hutch.networks.connect(name, client.id)
      assert.deepEqual(after.members.map((m) => m.sandbox_id).sort(), [web.id, client.id].sort())
      assert.equal(await resolves(client, 'sdk-ts-web'), true)
      assert.equal(await resolves(client, `${web.id}.${name}`), true)
      await assert.rejects(hutch.networks.delete(name), (e) => e.code === 'S251')
      after = await hutch.networks.disconnect(name, client)
      assert.deepEqual(after.members.map((m) => m.sandbox_id), [web.id])
      assert.equal(await resolves(client, 'sdk-ts-web'), false)
      await hutch.networks.disconnect(name, web.id)
    } finally {
      await web.stop()
      await client.stop()
      await hutch.networks.delete(name)
    }
    assert.ok(!(await hutch.networks.list()).some((n) => n.name === name))
  })
})

describe('volumes', () => {
  test('a volume outlives its sandboxes', async () => {
    const name = 'sdk-ts-vol'
    await hutch.volumes.delete(name).catch((e) => assert.equal(e.code, 'S260'))
    assert.equal((await hutch.volumes.create(name, { sizeMb: 16 })).size_mb, 16)
    try {
      assert.ok((await hutch.volumes.list()).some((v) => v.name === name))
      const writer = await hutch.create('python', { volumes: [{ name, path: '/data' }] })
      try {
        await writer.files.write('/data/note.txt', 'kept')
        assert.deepEqual((await hutch.volumes.get(name)).sandbox_ids, [writer.id])
        await assert.rejects(hutch.volumes.delete(name), (e) => e.code === 'S262')
      } finally {
        await writer.stop()
      }
      const reader = await hutch.create('python', { volumes: [{ name, path: '/mnt/v', read_only: true }] })
      try {
        assert.equal(await reader.files.readText('/mnt/v/note.txt'), 'kept')
        assert.notEqual((await reader.exec(['touch', '/mnt/v/other'])).exitCode, 0)
      } finally {
        await reader.stop()
      }
      assert.ok((await hutch.volumes.get(name)).used_bytes > 0)
    } finally {
      assert.equal((await hutch.volumes.delete(name)).deleted, true)
    }
    await assert.rejects(hutch.volumes.get(name), (e) => e.code === 'S260')
  })
})
