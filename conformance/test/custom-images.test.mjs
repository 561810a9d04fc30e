// Seed 000, "Custom images": the config sample as written, loaded by a
// second daemon of its own, and the create sample against it. The OCI
// references of the sample (ghcr.io/acme/my-app, docker.io/tenant/...) do
// not exist, so the create's pull fails; what is checked is everything the
// sample's rules promise before and around the pull.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { registerWorker } from 'iii-sdk'
import { HUTCH_BIN, envelopeOf } from '../lib.mjs'

const customImagesConfig = `
workers:
- name: iii-sandbox
  config:
    image_allowlist:
      - python
      - my-app
      - gpu-worker
    custom_images:
      my-app: ghcr.io/acme/my-app:1.2.3
      gpu-worker: docker.io/tenant/gpu-worker:cuda12
`

// serve starts `hutch serve` with config; it resolves to the daemon's
// addresses once it serves, or to its exit status and stderr if it exits.
function serve (config) {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-conformance-custom-'))
  writeFileSync(join(dir, 'config.yaml'), config)
  const child = spawn(HUTCH_BIN, ['serve', '--config', join(dir, 'config.yaml'), '--data-dir', join(dir, 'data'),
    '--listen', '127.0.0.1:0', '--engine-listen', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)))
  const ready = new Promise((resolve) => {
    child.stderr.on('data', (b) => {
      stderr += b
      for (const line of stderr.split('\n')) {
        if (line.includes('"msg":"hutch serving"')) {
          const l = JSON.parse(line)
          resolve({ http: `http://${l.listen}`, engine: `ws://${l.engine_listen}` })
        }
      }
    })
    exited.then((code) => resolve({ code, stderr }))
  })
  const stop = async () => {
    child.kill('SIGTERM')
    const code = await exited
    rmSync(dir, { recursive: true, force: true })
    return code
  }
  return { ready, stop }
}

describe('Custom images', () => {
  let daemon, addr, iii
  before(async () => {
    daemon = serve(customImagesConfig)
    addr = await daemon.ready
    assert.ok(addr.engine, `hutch serve refused the seed's config: ${addr.stderr}`)
    iii = registerWorker(addr.engine, { workerName: 'hutch-conformance-custom' })
  })
  after(async () => {
    await iii?.shutdown()
    assert.equal(await daemon.stop(), 0, 'hutch serve exits 0 on SIGTERM')
  })

  test('the config is accepted and the catalog lists the custom images', async () => {
    const { images } = await iii.trigger({ function_id: 'sandbox::catalog::list', payload: {} })
    assert.deepEqual(images.map((i) => [i.name, i.kind]),
      [['python', 'preset'], ['node', 'preset'], ['python-data', 'preset'], ['e2b-base', 'preset'], ['gpu-worker', 'custom'], ['my-app', 'custom']])
    assert.equal(images.find((i) => i.name === 'my-app').oci_ref, 'ghcr.io/acme/my-app:1.2.3')
  })

  test('callers boot a custom image exactly like a preset', { timeout: 120_000 }, async () => {
    // The sample, as written; its reference cannot be pulled here.
    const err = await (async () => {
      const { sandbox_id } = await iii.trigger({
        function_id: 'sandbox::create',
        payload: { image: 'my-app' },
        timeoutMs: 300_000,
      })
      return sandbox_id
    })().then((id) => assert.fail(`created ${id} from an image that does not exist`), (e) => e)
    const env = envelopeOf(err)
    // Allowed and in the catalog, so the pull was tried: S102, retryable.
    assert.equal(env?.code, 'S102', err.message)
    assert.equal(env.retryable, true)
  })

  test('presence in the catalog is not permission', async () => {
    // node is a preset, but this allowlist leaves it out.
    const err = await iii.trigger({ function_id: 'sandbox::create', payload: { image: 'node' } }).catch((e) => e)
    assert.equal(envelopeOf(err)?.code, 'S100')
    assert.match(envelopeOf(err).message, /python, gpu-worker, my-app|python, my-app, gpu-worker/)
  })

  test('presets cannot be shadowed: the daemon refuses the config', async () => {
    const bad = serve(customImagesConfig.replace('my-app: ghcr.io', 'python: ghcr.io'))
    const r = await bad.ready
    assert.notEqual(r.code, undefined, 'hutch serve started with a custom image named python')
    assert.notEqual(r.code, 0)
    assert.match(r.stderr, /python/)
    await bad.stop()
  })
})
