// E2B's egress surface through the stock `e2b` SDK (issue 37): secrets
// (create, list without values, getInfo, update, destroy), a create's
// network block with allowOut and header-transform rules naming a secret
// by Secret.fill, updateNetwork on a running sandbox, the parts hutch
// does not support refused with the reason, not silently taken; and
// allowPublicTraffic false with maskRequestHost on a sandbox's port; getInfo
// answers the network block (rules by placeholder, the preview terms).
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Sandbox, Secret } from 'e2b'
import { BOOT_TIMEOUT_MS, killE2B } from '../lib.mjs'

after(() => killE2B(Sandbox))

const opts = { timeoutMs: BOOT_TIMEOUT_MS }

describe('E2B network and secrets', () => {
  test('secrets: create, list, getInfo, update, destroy; values never answered', opts, async () => {
    const name = `key-${randomUUID().slice(0, 8)}`
    const value = `sk-${randomUUID()}`
    const created = await Secret.create(name, value)
    assert.equal(created.name, name)
    assert.ok(created.secretId)
    const listed = await Secret.list().nextItems()
    assert.ok(listed.some((s) => s.name === name))
    assert.ok(!JSON.stringify(listed).includes(value), 'a listing carries no value')
    assert.equal((await Secret.getInfo(created.secretId)).name, name)
    assert.equal((await Secret.update(name, `${value}-2`)).name, name)
    assert.equal(await Secret.exists(name), true)
    assert.equal(await Secret.destroy(created.secretId), true)
    assert.equal(await Secret.destroy(created.secretId), false)
    assert.equal(await Secret.exists(name), false)
  })

  test('network on create with rules, updateNetwork, unsupported fields refused', opts, async () => {
    await Secret.create('openai-key', `sk-${randomUUID()}`)
    try {
      const sbx = await Sandbox.create('base', {
        requestTimeoutMs: BOOT_TIMEOUT_MS,
        network: {
          allowOut: ['api.example.test'],
          rules: { 'api.example.test': [{ transform: { headers: { Authorization: `Bearer ${Secret.fill('openai-key')}` } } }] },
        },
      })
      const info = await Sandbox.getInfo(sbx.sandboxId)
      assert.deepEqual(info.network?.allowOut, ['api.example.test'])
      // The rule is answered with the secret's placeholder, never its value.
      assert.deepEqual(info.network?.rules, {
        'api.example.test': [{ transform: { headers: { Authorization: `Bearer ${Secret.fill('openai-key')}` } } }],
      })
      assert.equal(info.network?.allowPublicTraffic, true)
      // The sandbox trusts hutch's egress CA through the usual variables,
      // and holds no secret.
      const env = await sbx.commands.run('env')
      assert.match(env.stdout, /SSL_CERT_FILE=/)
      assert.match(env.stdout, /NODE_EXTRA_CA_CERTS=/)
      assert.doesNotMatch(env.stdout, /sk-/)

      await sbx.updateNetwork({ allowOut: ['other.example.test'], denyOut: ['10.0.0.0/8'] })
      assert.deepEqual((await Sandbox.getInfo(sbx.sandboxId)).network?.allowOut, ['other.example.test'])
      await assert.rejects(sbx.updateNetwork({ egressProxy: { address: 'proxy.example.test:1080' } }), /egressProxy/)
      await assert.rejects(
        Sandbox.create('base', { requestTimeoutMs: BOOT_TIMEOUT_MS, network: { maskRequestHost: 'not a host' } }),
        /host_header/)
      await assert.rejects(Sandbox.create('base', { requestTimeoutMs: BOOT_TIMEOUT_MS, network: { httpsPorts: [3000] } }), /httpsPorts/)
      await assert.rejects(
        Sandbox.create('base', { requestTimeoutMs: BOOT_TIMEOUT_MS, network: { egressProxy: { address: 'proxy.example.test:1080' } } }),
        /egressProxy/)
      await sbx.kill()
    } finally {
      await Secret.destroy('openai-key')
    }
  })

  // As E2B's own network tests: a request to a port of a sandbox created
  // with allowPublicTraffic false is 403 without its trafficAccessToken and
  // served with it; the server sees maskRequestHost's Host, ${PORT} filled.
  // The request goes as the SDK's own do under E2B_SANDBOX_URL (this
  // daemon has no wildcard DNS for getHost's names).
  test('allowPublicTraffic false and maskRequestHost', opts, async () => {
    const sbx = await Sandbox.create('base', {
      requestTimeoutMs: BOOT_TIMEOUT_MS,
      network: { allowPublicTraffic: false, maskRequestHost: 'custom-host.example.com:${PORT}' },
    })
    assert.ok(sbx.trafficAccessToken)
    const { network } = await Sandbox.getInfo(sbx.sandboxId)
    assert.equal(network?.allowPublicTraffic, false)
    assert.equal(network?.maskRequestHost, 'custom-host.example.com:${PORT}')
    const port = 8080
    await sbx.commands.run(`python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('/tmp/headers.txt', 'w') as f:
            for k, v in self.headers.items():
                f.write(k + ': ' + v + chr(10))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('', ${port}), H).serve_forever()
"`, { background: true })
    const toPort = (token) => fetch(process.env.E2B_SANDBOX_URL, {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': `${port}`, ...(token && { 'e2b-traffic-access-token': token }) },
    })
    // The server may still be starting: 502 until it listens.
    let res
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      res = await toPort(sbx.trafficAccessToken)
      if (res.status !== 502) break
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    assert.equal(res.status, 200)
    assert.equal((await toPort()).status, 403)
    assert.equal((await toPort(`${sbx.trafficAccessToken}x`)).status, 403)
    const seen = await sbx.commands.run('cat /tmp/headers.txt')
    assert.match(seen.stdout, new RegExp(`^Host: custom-host\\.example\\.com:${port}$`, 'm'))
    assert.doesNotMatch(seen.stdout, /traffic-access-token/i)
    await sbx.kill()
  })
})
