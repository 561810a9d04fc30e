// @hutch/sdk: a client of the hutch sandbox service: Node's fetch, and
// the ws package for terminals. Types: index.d.ts.

import { readFileSync, statSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import { Readable } from 'node:stream'
import WebSocket from 'ws'

const DEFAULT_URL = 'http://127.0.0.1:3111'
// The daemon's local Unix socket as the package installs it: used when no
// URL is given ($HUTCH_URL) and it exists.
export const DEFAULT_SOCKET = '/run/hutch/hutch.sock'

function isSocket (path) {
  try { return statSync(path).isSocket() } catch { return false }
}

// nodeFetch is fetch over node:http(s), for what the global fetch cannot
// be told: a CA to trust, a client certificate, a Unix socket. It answers
// a standard Response.
function nodeFetch (url, { method, headers, body, signal }, agentOptions) {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const mod = u.protocol === 'https:' ? https : http
    const req = mod.request(u, { method, headers, signal, ...agentOptions }, (res) => {
      const h = new Headers()
      for (const [k, v] of Object.entries(res.headers)) {
        for (const one of [v].flat()) if (one !== undefined) h.append(k, one)
      }
      const empty = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304
      if (empty) res.resume()
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, statusText: res.statusMessage, headers: h }))
    })
    req.on('error', reject)
    if (body === undefined || body === null) req.end()
    else if (typeof body.getReader === 'function') Readable.fromWeb(body).on('error', reject).pipe(req)
    else if (typeof body.arrayBuffer === 'function') body.arrayBuffer().then((b) => req.end(Buffer.from(b)), reject)
    else req.end(body)
  })
}

// Symbol.asyncDispose (Node 20), or the name Node gives it.
export const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')

/** An error the daemon answered, with its S-code. */
export class HutchError extends Error {
  constructor (envelope, status = 0) {
    super(`${envelope.code}: ${envelope.message}`)
    this.name = 'HutchError'
    this.envelope = envelope
    this.code = envelope.code ?? ''
    this.retryable = Boolean(envelope.retryable)
    this.fix = envelope.fix
    this.fixNote = envelope.fix_note ?? ''
    this.status = status
  }
}

/** The most bytes Files.download delivers unless its maxBytes says
 *  otherwise: what comes from a sandbox is untrusted, its size included. */
export const DEFAULT_MAX_DOWNLOAD = 2 ** 30

/** A download past its bound (Files.download's maxBytes): thrown before any
 *  byte when the daemon announced the size, else by the stream once it
 *  passed the bound; nothing past it is delivered. */
export class DownloadTooLargeError extends Error {
  constructor (limit, size) {
    super(`the download is ${size !== undefined ? `${size} bytes, over` : 'over'} the limit of ${limit} bytes (maxBytes raises it)`)
    this.name = 'DownloadTooLargeError'
    this.limit = limit
    this.size = size
  }
}

const q = encodeURIComponent

function query (params) {
  const kept = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== false && v !== '')
  if (kept.length === 0) return ''
  return '?' + new URLSearchParams(kept.map(([k, v]) => [k, v === true ? 'true' : String(v)])).toString()
}

/** A connection to a hutch daemon: at url ($HUTCH_URL; "unix:///path" is
 *  its local socket), else the socket at $HUTCH_SOCKET (default
 *  DEFAULT_SOCKET) when it exists, else DEFAULT_URL. caCert
 *  ($HUTCH_CA_CERT) is a PEM file of the CAs an https URL's certificate
 *  must chain to; clientCert and clientKey ($HUTCH_CLIENT_CERT,
 *  $HUTCH_CLIENT_KEY) a client certificate to present. */
export class Hutch {
  constructor ({ url, token, caCert, clientCert, clientKey } = {}) {
    const env = process.env
    url = url || env.HUTCH_URL
    if (!url) {
      const sock = env.HUTCH_SOCKET || DEFAULT_SOCKET
      url = isSocket(sock) ? 'unix://' + sock : DEFAULT_URL
    }
    this.socketPath = url.startsWith('unix://') ? url.slice('unix://'.length) : undefined
    // Over the socket the URL's host is only the Host header.
    this.url = this.socketPath ? 'http://localhost' : url.replace(/\/+$/, '')
    this.token = token ?? env.HUTCH_TOKEN ?? ''
    caCert ||= env.HUTCH_CA_CERT
    clientCert ||= env.HUTCH_CLIENT_CERT
    clientKey ||= env.HUTCH_CLIENT_KEY
    // Options of node:http(s) when the global fetch will not do.
    this.agentOptions = undefined
    if (this.socketPath || caCert || clientCert) {
      this.agentOptions = {}
      if (this.socketPath) this.agentOptions.socketPath = this.socketPath
      if (caCert) this.agentOptions.ca = readFileSync(caCert)
      if (clientCert) {
        this.agentOptions.cert = readFileSync(clientCert)
        this.agentOptions.key = readFileSync(clientKey || clientCert)
      }
    }
    this.networks = new Networks(this)
    this.secrets = new Secrets(this)
    this.volumes = new Volumes(this)
  }

  async fetch (method, path, { body, raw, accept = 'application/json', contentType = 'application/json', signal } = {}) {
    const headers = { accept }
    if (this.token) headers.authorization = `Bearer ${this.token}`
    let payload = raw
    if (body !== undefined) payload = JSON.stringify(body)
    if (payload !== undefined) headers['content-type'] = contentType
    const init = { method, headers, body: payload, signal }
    if (payload && typeof payload.getReader === 'function') init.duplex = 'half'
    const res = this.agentOptions ? await nodeFetch(this.url + path, init, this.agentOptions) : await fetch(this.url + path, init)
    if (!res.ok) {
      let envelope
      try { envelope = (await res.json()).error } catch { envelope = undefined }
      throw new HutchError(envelope ?? { code: String(res.status), message: res.statusText }, res.status)
    }
    return res
  }

  /** One call of the REST API: the decoded answer. */
  async request (method, path, body) {
    const res = await this.fetch(method, path, { body })
    const text = await res.text()
    return text ? JSON.parse(text) : undefined
  }

  /** A streaming call: an async iterator of its events; its final value
   *  is the stream's `result` once it is exhausted. */
  stream (method, path, body) {
    const abort = new AbortController()
    return new EventStream(this.fetch(method, path, { body, accept: 'application/x-ndjson', signal: abort.signal }), abort)
  }

  /** Any function of the table by id. */
  call (functionId, payload = {}) {
    return this.request('POST', `/v1/functions/${functionId}`, payload)
  }

  /** Create a sandbox (options: cpus, memory_mb, network: true or an
   *  egress policy {allow_out, deny_out}, env, volumes: [{name, path,
   *  read_only}], ...). */
  async create (image = 'python', options = {}) {
    const res = await this.request('POST', '/v1/sandboxes', { ...options, image })
    return new Sandbox(this, res.sandbox_id, res.image ?? image)
  }

  /** A sandbox that exists. */
  async connect (sandboxId) {
    const info = await this.request('GET', `/v1/sandboxes/${q(sandboxId)}`)
    return new Sandbox(this, info.sandbox_id, info.image)
  }

  async list () {
    return (await this.request('GET', '/v1/sandboxes')).sandboxes
  }

  async events (params = {}) {
    return (await this.request('GET', '/v1/events' + query(params))).events
  }

  /** The caller's use against its quota (issue 38): {owner, items: [{name, used, limit, key}]}. */
  async quota () {
    return this.request('GET', '/v1/quota')
  }
}

/** The events of a streaming call, from its NDJSON lines. Leaving the
 *  loop early (break, an exception) or close() ends the call. */
export class EventStream {
  constructor (response, abort) {
    this.response = response
    this.abort = abort
    this.closed = false
    this.result = undefined
    // An error answered before the first event is thrown where the stream
    // is iterated; one never iterated is not an unhandled rejection.
    Promise.resolve(response).catch(() => {})
  }

  async * [Symbol.asyncIterator] () {
    try {
      const res = await this.response
      const decoder = new TextDecoder()
      let buffered = ''
      for await (const chunk of res.body) {
        buffered += decoder.decode(chunk, { stream: true })
        let nl
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl)
          buffered = buffered.slice(nl + 1)
          if (!line.trim()) continue
          const m = JSON.parse(line)
          if (m.type === 'result') { this.result = m.result; return }
          if (m.type === 'error') throw new HutchError(m.error ?? {})
          yield { type: m.type, data: m.data }
        }
      }
    } catch (e) {
      if (this.closed && !(e instanceof HutchError)) return // close() cut it: the end, not an error
      throw e
    }
  }

  /** End the call (the daemon sees its caller go); a loop over the
   *  stream ends. */
  close () {
    this.closed = true
    this.abort?.abort()
  }

  async [asyncDispose] () { this.close() }

  /** Every event, then the final value. */
  async collect () {
    const events = []
    for await (const e of this) events.push(e)
    return { events, result: this.result }
  }
}

/** One sandbox. `await using` (or stop()) ends it. */
export class Sandbox {
  constructor (client, id, image = '') {
    this.client = client
    this.id = id
    this.image = image
    this.files = new Files(this)
    this.processes = new Processes(this)
    this.code = new Code(this)
    this.ports = new Ports(this)
    this.env = new Env(this)
    this.network = new Network(this)
    this.git = new Git(this)
  }

  /** The sandbox's REST path. */
  path (rest = '') { return `/v1/sandboxes/${q(this.id)}${rest}` }

  static async create (image, options, client = new Hutch()) { return client.create(image, options) }
  static async connect (id, client = new Hutch()) { return client.connect(id) }
  static async list (client = new Hutch()) { return client.list() }

  info () { return this.client.request('GET', this.path()) }
  async stop () { await this.client.request('DELETE', this.path('?wait=true')) }
  async [asyncDispose] () {
    try { await this.stop() } catch (e) { if (!(e instanceof HutchError) || !['S002', 'S004'].includes(e.code)) throw e }
  }

  /** Run a command and wait for it. */
  async exec (argv, { env, workdir, timeoutMs, stdin } = {}) {
    const res = await this.client.request('POST', this.path('/exec'), execBody(argv, { env, workdir, timeoutMs, stdin }))
    return { stdout: res.stdout, stderr: res.stderr, exitCode: res.exit_code, timedOut: res.timed_out, durationMs: res.duration_ms, timeoutMs: res.timeout_ms }
  }

  /** Run a command, its output as events as it is written. */
  execStream (argv, options = {}) {
    return this.client.stream('POST', this.path('/exec?stream=true'), execBody(argv, options))
  }

  pause ({ hibernate = false } = {}) { return this.client.request('POST', this.path('/pause'), { depth: hibernate ? 'hibernate' : 'freeze' }) }
  resume () { return this.client.request('POST', this.path('/resume'), {}) }
  snapshot () { return this.client.request('POST', this.path('/snapshots'), {}) }
  async fork (count = 1) {
    const res = await this.client.request('POST', this.path('/fork'), { count })
    return res.sandbox_ids.map((id) => new Sandbox(this.client, id, this.image))
  }

  metrics () { return this.client.request('GET', this.path('/metrics')) }
  logs ({ follow = false, tag } = {}) { return this.client.stream('GET', this.path('/logs' + query({ follow, tag }))) }

  /** A terminal: a duplex over the PTY WebSocket, on the client's
   *  transport (its CA and client certificate, or the Unix socket) and
   *  token, by the ws package. */
  pty ({ cols = 80, rows = 24, cmd, cwd } = {}) {
    const c = this.client
    const path = this.path('/pty' + query({ cols, rows, cmd, cwd }))
    // ws's form of a Unix socket: ws+unix://<socket>:<path>.
    const url = c.socketPath ? `ws+unix://${c.socketPath}:${path}` : c.url.replace(/^http/, 'ws') + path
    const tls = { ...c.agentOptions }
    delete tls.socketPath
    const headers = c.token ? { authorization: `Bearer ${c.token}` } : {}
    return new Terminal(new WebSocket(url, { ...tls, headers }))
  }
}

/** A terminal over the PTY WebSocket. */
export class Terminal {
  constructor (ws) {
    this.ws = ws
    ws.binaryType = 'arraybuffer'
    this.opened = new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject })
    this.exited = new Promise((resolve) => {
      ws.onclose = () => resolve(this.exitCode)
    })
    this.exitCode = undefined
    this.ondata = () => {}
    ws.onmessage = (m) => {
      if (typeof m.data === 'string') {
        const ctl = JSON.parse(m.data)
        if (ctl.type === 'exit') this.exitCode = ctl.exit_code
      } else {
        this.ondata(new Uint8Array(m.data))
      }
    }
  }

  async write (data) { await this.opened; this.ws.send(typeof data === 'string' ? new TextEncoder().encode(data) : data) }
  async resize (cols, rows) { await this.opened; this.ws.send(JSON.stringify({ type: 'resize', cols, rows })) }
  close () { this.ws.close() }
}

class Files {
  constructor (sb) { this.sb = sb }
  op (name, body, user) { return this.sb.client.request('POST', this.sb.path(`/fs/${name}`), user ? { ...body, user } : body) }

  write (path, content, { mode, parents = true, user } = {}) {
    const body = { path, parents }
    if (typeof content === 'string') body.content = content
    else body.content_b64 = Buffer.from(content).toString('base64')
    if (mode) body.mode = mode
    return this.op('write', body, user)
  }

  async read (path, { user } = {}) {
    const res = await this.op('read', { path }, user)
    return res.body !== undefined && res.body !== null ? Buffer.from(res.body) : Buffer.from(res.content_b64 ?? '', 'base64')
  }

  async readText (path, options) { return (await this.read(path, options)).toString() }
  async list (path, { user } = {}) { return (await this.op('ls', { path }, user)).entries }
  stat (path, { user } = {}) { return this.op('stat', { path }, user) }
  mkdir (path, { parents = true, user } = {}) { return this.op('mkdir', { path, parents }, user) }
  remove (path, { recursive = false, user } = {}) { return this.op('rm', { path, recursive }, user) }
  move (src, dst, { user } = {}) { return this.op('mv', { src, dst }, user) }
  async grep (path, pattern, { user } = {}) { return (await this.op('grep', { path, pattern }, user)).matches }

  /** Stream bytes (a Buffer, or a ReadableStream) into path. */
  async upload (path, data, { mode, user } = {}) {
    const res = await this.sb.client.fetch('PUT', this.sb.path('/files' + query({ path, mode, parents: true, user })),
      { raw: data, contentType: 'application/octet-stream' })
    return res.json()
  }

  /** A file's bytes as a ReadableStream: at most maxBytes of them (1 GiB
   *  by default; 0 for no bound), else DownloadTooLargeError. */
  async download (path, { user, maxBytes = DEFAULT_MAX_DOWNLOAD } = {}) {
    const res = await this.sb.client.fetch('GET', this.sb.path('/files' + query({ path, user })), { accept: 'application/octet-stream' })
    if (!(maxBytes > 0)) return res.body
    const size = res.headers.get('content-length')
    if (size !== null && Number(size) > maxBytes) {
      await res.body?.cancel()
      throw new DownloadTooLargeError(maxBytes, Number(size))
    }
    let left = maxBytes
    return res.body.pipeThrough(new TransformStream({
      transform (chunk, controller) {
        if (chunk.byteLength > left) {
          if (left > 0) controller.enqueue(chunk.subarray(0, left))
          left = 0
          controller.error(new DownloadTooLargeError(maxBytes))
          return
        }
        left -= chunk.byteLength
        controller.enqueue(chunk)
      }
    }))
  }

  /** The changes under a directory: an `open` event once the watch is in
   *  place, then `change` events ({type, path, old_path, is_dir}) and
   *  `overflow` when some were lost, until the loop ends (or close()), the
   *  directory is removed or the sandbox stops (S004). */
  watch (path, { recursive = false, user } = {}) {
    return this.sb.client.stream('GET', this.sb.path('/fs/watch' + query({ path, recursive, user })))
  }
}

class Processes {
  constructor (sb) { this.sb = sb }
  p (pid, rest = '') { return this.sb.path(`/processes/${Number(pid)}${rest}`) }

  async start (argv, { tag, stdin = false, env, workdir } = {}) {
    const body = { argv, stdin }
    if (tag) body.tag = tag
    if (env) body.env = env
    if (workdir) body.workdir = workdir
    return (await this.sb.client.request('POST', this.sb.path('/processes'), body)).pid
  }

  async list () { return (await this.sb.client.request('GET', this.sb.path('/processes'))).processes }
  get (pid) { return this.sb.client.request('GET', this.p(pid)) }
  output (pid) { return this.sb.client.request('GET', this.p(pid, '/output')) }
  follow (pid) { return this.sb.client.stream('GET', this.p(pid, '/output?follow=true')) }
  writeStdin (pid, data, { close = false } = {}) {
    const body = typeof data === 'string' ? { data, close } : { data: Buffer.from(data).toString('base64'), base64: true, close }
    return this.sb.client.request('POST', this.p(pid, '/stdin'), body)
  }

  signal (pid, signal = 'TERM') { return this.sb.client.request('POST', this.p(pid, '/signal'), { signal }) }
  kill (pid) { return this.sb.client.request('DELETE', this.p(pid)) }
  wait (pid, timeoutMs = 0) { return this.sb.client.request('POST', this.p(pid, '/wait'), { timeout_ms: timeoutMs }) }
}

class Ports {
  constructor (sb) { this.sb = sb }

  /** Make a port reachable; its preview URL. */
  async expose (port, { public: isPublic = false, expiresInSecs, cors } = {}) {
    const body = { port, public: isPublic }
    if (expiresInSecs) body.expires_in_secs = expiresInSecs
    if (cors) body.cors = cors
    const info = await this.sb.client.request('POST', this.sb.path('/ports'), body)
    return this.sb.client.url + info.url
  }

  async list () { return (await this.sb.client.request('GET', this.sb.path('/ports'))).ports }
  unexpose (port) { return this.sb.client.request('DELETE', this.sb.path(`/ports/${Number(port)}`)) }
}

class Code {
  constructor (sb) { this.sb = sb }

  /** Run a cell; onOutput gets its stdout and stderr events. */
  async run (code, { language, contextId, timeoutMs, onOutput } = {}) {
    const body = { code }
    if (language) body.language = language
    if (contextId) body.context_id = contextId
    if (timeoutMs) body.timeout_ms = timeoutMs
    const stream = this.sb.client.stream('POST', this.sb.path('/run-code'), body)
    for await (const e of stream) onOutput?.(e)
    return stream.result
  }

  async createContext ({ language = 'python', cwd } = {}) {
    return (await this.sb.client.request('POST', this.sb.path('/contexts'), cwd ? { language, cwd } : { language })).context_id
  }

  async contexts () { return (await this.sb.client.request('GET', this.sb.path('/contexts'))).contexts }
  interrupt (contextId) { return this.sb.client.request('POST', `/v1/contexts/${q(contextId)}/interrupt`) }
  restart (contextId) { return this.sb.client.request('POST', `/v1/contexts/${q(contextId)}/restart`) }
}

/** A sandbox's own environment, under every later exec's, process's and
 *  context's (running ones keep theirs). */
class Env {
  constructor (sb) { this.sb = sb }

  /** {env: its own variables, effective: what an exec starts from}. */
  list () { return this.sb.client.request('GET', this.sb.path('/env')) }

  /** A variable of the effective environment; undefined when not set. */
  async get (key) {
    const res = await this.sb.client.request('GET', this.sb.path(`/env/${q(key)}`))
    return res.set ? res.value : undefined
  }

  /** Add or replace variables; the environment after. */
  set (env) { return this.sb.client.request('POST', this.sb.path('/env'), { env }) }

  /** Remove variables (one of the image's goes back to the image's value);
   *  the environment after. */
  async delete (...keys) {
    if (keys.length === 0) throw new TypeError('env.delete needs a key')
    let res
    for (const key of keys) res = await this.sb.client.request('DELETE', this.sb.path(`/env/${q(key)}`))
    return res
  }
}

/** A sandbox's network (it was created with `network`). */
class Network {
  constructor (sb) { this.sb = sb }

  /** Replace its egress policy ({allow_out, deny_out}; {} lifts it). */
  update (policy = {}) { return this.sb.client.request('POST', this.sb.path('/network'), policy) }
}

const sandboxId = (sb) => typeof sb === 'string' ? sb : sb.id

/** The caller's sandbox networks: members reach each other by name, id or
 *  address; nobody else reaches them. */
class Networks {
  constructor (client) { this.client = client }
  create (name) { return this.client.request('POST', '/v1/networks', { name }) }
  async list () { return (await this.client.request('GET', '/v1/networks')).networks ?? [] }
  delete (name) { return this.client.request('DELETE', `/v1/networks/${q(name)}`) }
  /** Put a sandbox (or a sandbox id) on the network; the network after. */
  connect (name, sb) { return this.client.request('POST', `/v1/networks/${q(name)}/members`, { sandbox_id: sandboxId(sb) }) }
  disconnect (name, sb) { return this.client.request('DELETE', `/v1/networks/${q(name)}/members/${q(sandboxId(sb))}`) }
}

/** The caller's secrets, which egress transforms write into sandboxes'
 *  HTTPS requests ({{secret.NAME}}); a value is never answered. */
class Secrets {
  constructor (client) { this.client = client }
  set (name, value) { return this.client.request('POST', '/v1/secrets', { name, value }) }
  async list () { return (await this.client.request('GET', '/v1/secrets')).secrets ?? [] }
  delete (name) { return this.client.request('DELETE', `/v1/secrets/${q(name)}`) }
  /** The egress proxy's recent decisions about a sandbox (or its id). */
  async egressLog (sb) { return (await this.client.request('GET', `/v1/sandboxes/${q(sandboxId(sb))}/egress`)).decisions ?? [] }
}

/** The caller's volumes: named file systems of a fixed size that outlive
 *  sandboxes, mounted at create (volumes: [{name, path, read_only}]). */
class Volumes {
  constructor (client) { this.client = client }
  create (name, { sizeMb } = {}) { return this.client.request('POST', '/v1/volumes', sizeMb ? { name, size_mb: sizeMb } : { name }) }
  async list () { return (await this.client.request('GET', '/v1/volumes')).volumes ?? [] }
  get (name) { return this.client.request('GET', `/v1/volumes/${q(name)}`) }
  /** Delete a volume no live sandbox mounts (S262 otherwise). */
  delete (name) { return this.client.request('DELETE', `/v1/volumes/${q(name)}`) }
}

/** git in the sandbox, one operation a call (sandbox::git::{op}), each
 *  answering its structured result. Every operation takes the repository's
 *  path first (absolute; '' for the image's working directory) and options
 *  in camelCase (user, env, timeoutMs and its own); clone, fetch, pull and
 *  push take credentials for that one call (username and password, or
 *  token) and credentialsFor, where they may go (a host for https, or an
 *  http(s) URL prefix; needed for a remote given by name). */
class Git {
  constructor (sb) { this.sb = sb }

  op (name, path, fields, options = {}) {
    const body = {}
    for (const [k, v] of Object.entries({ ...options, ...fields })) {
      if (v !== undefined) body[k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())] = v
    }
    if (path) body.path = path
    return this.sb.client.request('POST', this.sb.path(`/git/${name}`), body)
  }

  init (path, options) { return this.op('init', path, {}, options) }
  /** Clone url into path; origin is stored without credentials. */
  clone (url, path, options) { return this.op('clone', path, { url }, options) }
  status (path, options) { return this.op('status', path, {}, options) }
  /** Stage paths (every change without); the status after. */
  add (path, paths, options) { return this.op('add', path, { paths }, options) }
  commit (path, message, options) { return this.op('commit', path, { message }, options) }
  diff (path, options) { return this.op('diff', path, {}, options) }
  log (path, options) { return this.op('log', path, {}, options) }
  branch (path, options) { return this.op('branch', path, {}, options) }
  checkout (path, ref, options) { return this.op('checkout', path, { ref }, options) }
  reset (path, options) { return this.op('reset', path, {}, options) }
  restore (path, paths, options) { return this.op('restore', path, { paths }, options) }
  remote (path, options) { return this.op('remote', path, {}, options) }
  config (path, options) { return this.op('config', path, {}, options) }
  fetch (path, options) { return this.op('fetch', path, {}, options) }
  push (path, options) { return this.op('push', path, {}, options) }
  pull (path, options) { return this.op('pull', path, {}, options) }
}

function execBody (argv, { env, workdir, timeoutMs, stdin } = {}) {
  if (!Array.isArray(argv) || argv.length === 0) throw new TypeError('exec needs a command: an array of strings')
  const body = { argv }
  if (env) body.env = env
  if (workdir) body.workdir = workdir
  if (timeoutMs) body.timeout_ms = timeoutMs
  if (stdin !== undefined) body.stdin = Buffer.from(stdin).toString('base64')
  return body
}
