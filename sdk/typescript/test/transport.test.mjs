// The SDK's transports without a daemon: https with a private CA (given,
// or $HUTCH_CA_CERT) and the local Unix socket, each against a small
// server of this test that answers GET /v1/sandboxes and, for terminals,
// a WebSocket (ws's server) that echoes what it was asked and exits 7.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WebSocketServer } from 'ws'
import { Hutch, Sandbox } from '../src/index.js'

const dir = mkdtempSync(join(tmpdir(), 'hutch-sdk-ts-'))
const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
const answer = (name) => (req, res) => {
  res.writeHead(req.url === '/v1/sandboxes' ? 200 : 404, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ sandboxes: [{ sandbox_id: `via-${name}`, echoed: req.method === 'POST' }] }))
}
const listen = (srv, ...args) => new Promise((resolve) => srv.listen(...args, resolve))
const ids = async (h) => (await h.list()).map((s) => s.sandbox_id)

// ptyEcho answers a terminal on srv: one binary frame naming the server,
// the request's path and its Authorization header, then exit code 7.
function ptyEcho (srv, name) {
  new WebSocketServer({ server: srv }).on('connection', (ws, req) => {
    ws.send(Buffer.from(`${name} ${req.url} ${req.headers.authorization ?? '-'}`))
    ws.send(JSON.stringify({ type: 'exit', exit_code: 7 }))
    ws.close()
  })
}

// terminal runs a terminal of sandbox sb-1 on h: what it showed, its exit code.
async function terminal (h) {
  const term = new Sandbox(h, 'sb-1', 'python').pty({ cmd: 'sh' })
  let shown = ''
  term.ondata = (bytes) => { shown += new TextDecoder().decode(bytes) }
  const code = await term.exited
  return `${shown} exit ${code}`
}

describe('transports', () => {
  let tlsServer, unixServer, httpsUrl
  const ca = join(dir, 'ca.crt')
  const sock = join(dir, 'hutch.sock')
  const saved = { ...process.env }

  before(async () => {
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=hutch test CA')
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1')
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n')
    openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'san.ext')
    tlsServer = https.createServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.crt')) }, answer('tls'))
    await listen(tlsServer, 0, '127.0.0.1')
    httpsUrl = `https://127.0.0.1:${tlsServer.address().port}`
    unixServer = http.createServer(answer('socket'))
    await listen(unixServer, sock)
    ptyEcho(tlsServer, 'tls')
    ptyEcho(unixServer, 'socket')
  })

  after(() => {
    process.env = saved
    tlsServer?.close()
    unixServer?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('https with a given CA', async () => {
    delete process.env.HUTCH_CA_CERT
    assert.deepEqual(await ids(new Hutch({ url: httpsUrl, caCert: ca })), ['via-tls'])
    // The system's CAs do not know the private one.
    await assert.rejects(new Hutch({ url: httpsUrl }).list())
  })

  test('https with $HUTCH_CA_CERT', async () => {
    process.env.HUTCH_CA_CERT = ca
    try {
      assert.deepEqual(await ids(new Hutch({ url: httpsUrl })), ['via-tls'])
    } finally {
      delete process.env.HUTCH_CA_CERT
    }
  })

  test('the Unix socket', async () => {
    assert.deepEqual(await ids(new Hutch({ url: `unix://${sock}` })), ['via-socket'])
    // A body goes over it too.
    const res = await new Hutch({ url: `unix://${sock}` }).request('POST', '/v1/sandboxes', { image: 'python' })
    assert.equal(res.sandboxes[0].echoed, true)
    // Without a URL, the socket $HUTCH_SOCKET names when it exists.
    delete process.env.HUTCH_URL
    process.env.HUTCH_SOCKET = sock
    try {
      assert.deepEqual(await ids(new Hutch()), ['via-socket'])
      process.env.HUTCH_SOCKET = join(dir, 'absent.sock')
      assert.equal(new Hutch().url, 'http://127.0.0.1:3111')
    } finally {
      process.env = { ...saved }
    }
  })

  test('terminals over https with a private CA, and over the Unix socket, with the token', async () => {
    const pty = '/v1/sandboxes/sb-1/pty?cols=80&rows=24&cmd=sh'
    assert.equal(await terminal(new Hutch({ url: httpsUrl, caCert: ca, token: 'tok-1' })), `tls ${pty} Bearer tok-1 exit 7`)
    assert.equal(await terminal(new Hutch({ url: `unix://${sock}` })), `socket ${pty} - exit 7`)
    // Without the CA the handshake fails: the terminal never opens.
    const term = new Sandbox(new Hutch({ url: httpsUrl }), 'sb-1', 'python').pty()
    await assert.rejects(term.opened)
  })
})
