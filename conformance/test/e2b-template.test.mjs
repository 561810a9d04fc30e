// E2B's Template SDK through the stock `e2b` SDK against hutch (issue 39):
// Template().fromImage(...).copy(...).setEnvs(...).setWorkdir(...)
// .runCmd(...).setUser(...).setStartCmd(..., ready) built with
// Template.build (file uploads to links hutch serves itself, build logs
// streamed to onBuildLogs); Sandbox.create(name) then starts with the app
// already running. A step hutch cannot run is the SDK's BuildError.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BuildError, Sandbox, Template } from 'e2b'
import { BOOT_TIMEOUT_MS, killE2B } from '../lib.mjs'

const dir = mkdtempSync(join(tmpdir(), 'hutch-e2b-template-'))
after(async () => {
  await killE2B(Sandbox)
  rmSync(dir, { recursive: true, force: true })
})

const opts = { timeoutMs: BOOT_TIMEOUT_MS }

describe('E2B Template SDK', () => {
  test('build, then create runs from it with its app running', opts, async () => {
    mkdirSync(join(dir, 'app'))
    writeFileSync(join(dir, 'app', 'index.html'), 'from the template\n')
    const name = `e2b-tmpl-${process.pid}`
    const template = Template({ fileContextPath: dir })
      .fromImage('python:3')
      .copy('app', '/srv/app')
      .setEnvs({ GREETING: 'hello there' })
      .setWorkdir('/srv')
      .runCmd('echo "$GREETING" > /srv/greeting.txt && useradd -m runner')
      .setUser('runner')
      // Ready once the server accepts connections (the image has no ss).
      .setStartCmd(`sh -c "python3 -c 'import uuid; print(uuid.uuid4())' > /tmp/started && exec python3 -m http.server 8080 --directory /srv"`,
        `python3 -c "import socket; socket.create_connection(('127.0.0.1', 8080), 1)"`)
    const logs = []
    const built = await Template.build(template, name, {
      cpuCount: 1,
      memoryMB: 512,
      onBuildLogs: (entry) => logs.push(entry.message),
      requestTimeoutMs: BOOT_TIMEOUT_MS
    })
    assert.equal(built.templateId, name)
    assert.ok(logs.some((l) => l.includes('RUN')), logs.join('\n'))
    assert.ok(logs.some((l) => l.startsWith('starting:')), logs.join('\n'))

    const sbx = await Sandbox.create(name, { requestTimeoutMs: BOOT_TIMEOUT_MS })
    const files = await sbx.commands.run('cat /srv/greeting.txt /srv/app/index.html /tmp/started')
    const [greeting, index, started] = files.stdout.trim().split('\n')
    assert.equal(greeting, 'hello there')
    assert.equal(index, 'from the template')
    // The start command wrote a random token once, at the build: another
    // sandbox of the template has the same one.
    const other = await Sandbox.create(name, { requestTimeoutMs: BOOT_TIMEOUT_MS })
    assert.equal((await other.commands.run('cat /tmp/started')).stdout.trim(), started)
    assert.ok(started.length >= 32, started)
    await other.kill()
    const page = await sbx.commands.run(`python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8080/app/index.html').read().decode(), end='')"`)
    assert.equal(page.stdout, 'from the template\n')
    await sbx.kill()

    // Built again unchanged: every step comes from the cache.
    const again = []
    await Template.build(template, name, { onBuildLogs: (e) => again.push(e.message), requestTimeoutMs: BOOT_TIMEOUT_MS })
    const steps = again.filter((l) => /^\[\d+\/\d+\]/.test(l))
    assert.ok(steps.length > 0 && steps.every((l) => l.endsWith('(cached)')), again.join('\n'))
  })

  test('what hutch cannot build is a BuildError', opts, async () => {
    const t = Template().fromTemplate('someone-elses')
    await assert.rejects(Template.build(t, `e2b-bad-${process.pid}`, { requestTimeoutMs: BOOT_TIMEOUT_MS }), BuildError)
  })
})
