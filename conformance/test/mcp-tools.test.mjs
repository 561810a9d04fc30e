// The MCP server's breadth (issue 44) with the official TypeScript client
// (@modelcontextprotocol/sdk): the tool sets, one tool of every area
// called against the daemon, the annotations, progress of long work, and
// an interpreter figure as image content.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { BOOT_TIMEOUT_MS, HUTCH_BIN, HUTCH_URL, http } from '../lib.mjs'

// The areas `--tools` and /mcp?tools= take (api.ToolAreas).
const AREAS = ['sandboxes', 'exec', 'interpreter', 'processes', 'files', 'git', 'env', 'snapshots', 'templates',
  'ports', 'events', 'metrics', 'alerts', 'networks', 'volumes', 'jobs']

// The default set: the tools agents use most, as before issue 44.
const DEFAULT_TOOLS = ['expose_port', 'file_edit', 'file_list', 'file_read', 'file_search', 'file_upload_url', 'file_write',
  'git_add', 'git_clone', 'git_commit', 'git_diff', 'git_log', 'git_pull', 'git_push', 'git_status',
  'process_kill', 'process_output', 'run_code', 'run_command', 'sandbox_create', 'sandbox_fork', 'sandbox_list', 'sandbox_snapshot', 'sandbox_stop']

const clients = []
after(async () => { for (const c of clients) await c.close() })

async function connect (transport) {
  const client = new Client({ name: 'hutch-conformance-tools', version: '1.0.0' })
  await client.connect(transport)
  clients.push(client)
  return client
}

const overHTTP = (query = '') => connect(new StreamableHTTPClientTransport(new URL(HUTCH_URL + '/mcp' + query)))

async function toolNames (client) {
  const names = []
  let cursor
  do {
    const page = await client.listTools(cursor ? { cursor } : {})
    names.push(...page.tools.map((t) => t.name))
    cursor = page.nextCursor
  } while (cursor)
  return names.sort()
}

// lastEventId is the id of the newest event of the log, paging
// event_list to its end.
async function lastEventId (client) {
  let last = ''
  let page = await call(client, 'event_list')
  for (;;) {
    if (page.events.length > 0) last = page.events.at(-1).id
    if (!page.next) return last
    page = await call(client, 'event_list', { after: page.next })
  }
}

const texts = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')

// call calls a tool and returns its structured result, failing on a
// tool error with its text.
async function call (client, name, args = {}, options = {}) {
  const res = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: BOOT_TIMEOUT_MS, ...options })
  assert.ok(!res.isError, `${name}: ${texts(res)}`)
  return res.structuredContent
}

describe('MCP tool sets', () => {
  test('default, all, each area, over HTTP and stdio; an unknown set is S001', { timeout: BOOT_TIMEOUT_MS }, async () => {
    assert.deepEqual(await toolNames(await overHTTP()), DEFAULT_TOOLS)
    assert.deepEqual(await toolNames(await overHTTP('?tools=default')), DEFAULT_TOOLS)
    const all = await toolNames(await overHTTP('?tools=all'))
    assert.ok(all.length >= 39, `all has ${all.length} tools`)
    for (const name of DEFAULT_TOOLS) assert.ok(all.includes(name), `all lacks ${name}`)
    const union = new Set()
    for (const area of AREAS) {
      const names = await toolNames(await overHTTP('?tools=' + area))
      assert.ok(names.length > 0, `area ${area} has no tools`)
      for (const n of names) union.add(n)
    }
    assert.deepEqual([...union].sort(), all, 'the areas together are all the tools')
    assert.deepEqual(await toolNames(await overHTTP('?tools=env,volumes')),
      ['env_delete', 'env_get', 'env_list', 'env_set', 'volume_create', 'volume_delete',
        'volume_fs_list', 'volume_fs_mkdir', 'volume_fs_read', 'volume_fs_remove', 'volume_fs_set', 'volume_fs_stat', 'volume_fs_write',
        'volume_get', 'volume_list'])

    const res = await fetch(HUTCH_URL + '/mcp?tools=everything', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })
    })
    assert.equal(res.status, 400)
    const body = await res.json()
    assert.equal(body.error.code, 'S001')
    assert.match(body.error.message, /unknown tool set "everything"/)

    const stdio = await connect(new StdioClientTransport({ command: HUTCH_BIN, args: ['mcp', '--tools', 'default,jobs'], env: { ...process.env, HUTCH_URL } }))
    const jobs = await toolNames(stdio)
    assert.deepEqual(jobs, [...DEFAULT_TOOLS, 'job_cancel', 'job_get', 'job_list', 'job_retry', 'job_submit'].sort())
  })

  test('every tool carries its hints; destructive ones say so', async () => {
    const client = await overHTTP('?tools=all')
    const { tools } = await client.listTools()
    for (const t of tools) {
      assert.equal(typeof t.annotations?.destructiveHint, 'boolean', `${t.name}: ${JSON.stringify(t.annotations)}`)
      assert.equal(typeof t.annotations.readOnlyHint, 'boolean', t.name)
      assert.equal(typeof t.annotations.idempotentHint, 'boolean', t.name)
      assert.equal(typeof t.annotations.openWorldHint, 'boolean', t.name)
      assert.ok(!(t.annotations.readOnlyHint && t.annotations.destructiveHint), `${t.name} reads only and destroys`)
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]))
    for (const name of ['sandbox_stop', 'volume_delete', 'snapshot_delete', 'file_remove', 'job_cancel']) {
      assert.equal(byName[name].annotations.destructiveHint, true, name)
    }
    assert.deepEqual(byName.env_list.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false })
    assert.equal(byName.git_push.annotations.openWorldHint, true)
    // A generated tool's input is its function's request, sandbox_id
    // optional (the session's sandbox).
    assert.deepEqual(byName.env_set.inputSchema.required, ['env'])
    assert.equal(byName.env_set.inputSchema.properties.sandbox_id.type, 'string')
  })
})

describe('MCP tools of every area against the daemon', () => {
  let client
  let id
  const stamp = Date.now().toString(36)
  before(async () => {
    client = await overHTTP('?tools=all')
    id = (await call(client, 'sandbox_create', { make_default: true })).sandbox_id
  })

  test('sandboxes, exec, interpreter, processes, files, git, env', { timeout: BOOT_TIMEOUT_MS }, async () => {
    assert.ok((await call(client, 'image_list')).images.some((i) => i.name === 'python'))
    assert.equal((await call(client, 'sandbox_get')).sandbox_id, id)
    const renewed = await call(client, 'sandbox_set_timeout', { timeout_secs: 600 })
    assert.ok(Date.parse(renewed.expires_at) > Date.now())

    assert.match(texts(await client.callTool({ name: 'run_command', arguments: { command: 'echo $((6 * 7))' } })), /42/)

    const ctx = await call(client, 'context_create', { language: 'python' })
    const { contexts } = await call(client, 'context_list')
    assert.ok(contexts.some((c) => c.context_id === ctx.context_id))
    assert.match(texts(await client.callTool({ name: 'run_code', arguments: { code: 'v = 5\nv * 2', context_id: ctx.context_id } })), /10/)
    await call(client, 'context_delete', { context_id: ctx.context_id })

    // A background process that reads its stdin.
    const { pid } = await call(client, 'process_start', { argv: ['sh', '-c', 'read line; echo "got $line"'], stdin: true, tag: 'mcp' })
    assert.ok((await call(client, 'process_list')).processes.some((p) => p.pid === pid))
    await call(client, 'process_stdin', { pid, data: 'hello\n', close: true })
    const waited = await call(client, 'process_wait', { pid, timeout_ms: 60_000 })
    assert.equal(waited.exit_code, 0)
    assert.match(texts(await client.callTool({ name: 'process_output', arguments: { pid } })), /got hello/)

    await call(client, 'file_mkdir', { path: '/tmp/mcp-dir/sub', parents: true })
    assert.equal((await call(client, 'file_stat', { path: '/tmp/mcp-dir/sub' })).is_dir, true)
    await call(client, 'file_remove', { path: '/tmp/mcp-dir', recursive: true })
    const gone = await client.callTool({ name: 'file_stat', arguments: { path: '/tmp/mcp-dir' } })
    assert.equal(gone.isError, true)
    assert.match(texts(gone), /^S211: /)

    await call(client, 'git_init', { path: '/tmp/repo', initial_branch: 'trunk' })
    assert.equal((await call(client, 'git_status', { path: '/tmp/repo' })).branch, 'trunk')

    await call(client, 'env_set', { env: { GREETING: 'hi from mcp' } })
    assert.equal((await call(client, 'env_get', { key: 'GREETING' })).value, 'hi from mcp')
    assert.match(texts(await client.callTool({ name: 'run_command', arguments: { command: 'echo "$GREETING"' } })), /hi from mcp/)
    await call(client, 'env_delete', { keys: ['GREETING'] })
  })

  test('snapshots, templates, ports, events, metrics (with progress), alerts', { timeout: BOOT_TIMEOUT_MS }, async () => {
    // A snapshot, listed, restored into a new sandbox that has the
    // file written before it, then deleted.
    await call(client, 'file_write', { path: '/tmp/before-snapshot.txt', content: 'kept' })
    const snap = await call(client, 'sandbox_snapshot')
    assert.ok((await call(client, 'snapshot_list')).snapshots.some((s) => s.snapshot_id === snap.snapshot_id))
    const restored = (await call(client, 'sandbox_create', { snapshot_id: snap.snapshot_id })).sandbox_id
    assert.notEqual(restored, id)
    assert.equal(texts(await client.callTool({ name: 'file_read', arguments: { sandbox_id: restored, path: '/tmp/before-snapshot.txt' } })), 'kept')
    await call(client, 'sandbox_stop', { sandbox_id: restored })
    await call(client, 'snapshot_delete', { snapshot_id: snap.snapshot_id })

    const name = 'mcp-' + stamp
    await call(client, 'template_create', { name, image: 'python', memory_mb: 256 })
    assert.ok((await call(client, 'template_list')).templates.some((t) => t.name === name))
    assert.equal((await call(client, 'template_get', { name })).name, name)
    await call(client, 'template_delete', { name })

    assert.deepEqual((await call(client, 'port_list')).ports ?? [], [])

    // event_wait answers an event of the log after a cursor: pausing and
    // resuming records sandbox.paused after it.
    const { events } = await call(client, 'event_list', { sandbox_id: id })
    assert.ok(events.some((e) => e.type === 'sandbox.created'))
    const cursor = await lastEventId(client)
    assert.equal((await call(client, 'sandbox_pause')).state, 'paused')
    assert.equal((await call(client, 'sandbox_resume')).state, 'running')
    const waited = await call(client, 'event_wait', { sandbox_id: id, type: 'sandbox.paused', after: cursor, wait_secs: 60 })
    assert.equal(waited.timed_out, false)
    assert.equal(waited.events.length, 1)
    assert.equal(waited.events[0].type, 'sandbox.paused')

    assert.ok((await call(client, 'sandbox_metrics')).memory_bytes >= 0)
    const progress = []
    const samples = await call(client, 'metrics_watch', { count: 2, interval_ms: 200 }, { onprogress: (p) => progress.push(p.message) })
    assert.equal(samples.events.length, 2)
    assert.equal(samples.events[0].type, 'metrics')
    assert.equal(progress.length, 2, 'each sample came as progress')

    const alert = await call(client, 'alert_create', { metric: 'memory', threshold: 100000, for_secs: 60 })
    assert.ok((await call(client, 'alert_list', { sandbox_id: id })).alerts.some((a) => a.alert_id === alert.alert_id))
    await call(client, 'alert_delete', { alert_id: alert.alert_id })
  })

  test('networks, volumes, jobs', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const net = 'mcp-' + stamp
    await call(client, 'network_create', { name: net })
    assert.ok((await call(client, 'network_list')).networks.some((n) => n.name === net))
    await call(client, 'network_delete', { name: net })

    const vol = 'mcp-' + stamp
    assert.equal((await call(client, 'volume_create', { name: vol, size_mb: 16 })).name, vol)
    // A sandbox mounts it; what it writes is there for the next one.
    const mounts = [{ name: vol, path: '/data' }]
    const writer = (await call(client, 'sandbox_create', { volumes: mounts })).sandbox_id
    await call(client, 'file_write', { sandbox_id: writer, path: '/data/note.txt', content: 'on the volume' })
    const inUse = await client.callTool({ name: 'volume_delete', arguments: { name: vol } })
    assert.equal(inUse.isError, true)
    assert.match(texts(inUse), /^S262: /)
    await call(client, 'sandbox_stop', { sandbox_id: writer })
    const reader = (await call(client, 'sandbox_create', { volumes: mounts })).sandbox_id
    assert.equal(texts(await client.callTool({ name: 'file_read', arguments: { sandbox_id: reader, path: '/data/note.txt' } })), 'on the volume')
    await call(client, 'sandbox_stop', { sandbox_id: reader })
    assert.equal((await call(client, 'volume_get', { name: vol })).name, vol)
    await call(client, 'volume_delete', { name: vol })
    const missing = await client.callTool({ name: 'volume_get', arguments: { name: vol } })
    assert.equal(missing.isError, true)

    // The job's end is waited for as its event, job.finished.
    const cursor = await lastEventId(client)
    const job = await call(client, 'job_submit', { sandbox_id: id, argv: ['echo', 'from a job'] })
    const finished = await call(client, 'event_wait', { type: 'job.finished', after: cursor, wait_secs: 120 })
    assert.equal(finished.timed_out, false)
    const info = await call(client, 'job_get', { job_id: job.job_id })
    assert.equal(info.state, 'succeeded', JSON.stringify(info))
    assert.match(info.result.stdout, /from a job/)
    assert.ok((await call(client, 'job_list')).jobs.some((j) => j.job_id === job.job_id))
  })

  test('long work reports progress; an interpreter figure is image content', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const progress = []
    const cell = await client.callTool({ name: 'run_code', arguments: { code: 'import time\nfor i in range(3):\n    print("step", i, flush=True)\n    time.sleep(0.5)' } },
      CallToolResultSchema, { onprogress: (p) => progress.push(p.message), timeout: 60_000 })
    assert.ok(!cell.isError, texts(cell))
    assert.equal(progress.join(''), 'step 0\nstep 1\nstep 2\n')

    // A figure shown the way matplotlib's are: the kernel saves every
    // open figure of matplotlib.pyplot as a PNG after the cell. The
    // python image has no matplotlib, so the cell puts a stand-in
    // pyplot in its place whose figure writes a real PNG (made with the
    // standard library); with matplotlib (python-data) the same cell
    // draws a real plot.
    const figure = await client.callTool({ name: 'run_code', arguments: { code: figureCell } }, CallToolResultSchema, { timeout: 60_000 })
    assert.ok(!figure.isError, texts(figure))
    const image = figure.content.find((c) => c.type === 'image')
    assert.equal(image?.mimeType, 'image/png')
    const png = Buffer.from(image.data, 'base64')
    assert.equal(png.subarray(0, 8).toString('latin1'), '\x89PNG\r\n\x1a\n')
  })

  test('a destructive tool acts: sandbox_stop stops the sandbox', { timeout: BOOT_TIMEOUT_MS }, async () => {
    await call(client, 'sandbox_stop', { sandbox_id: id })
    const { sandboxes } = await http('GET', '/v1/sandboxes')
    assert.ok(!sandboxes.some((s) => s.sandbox_id === id && !s.stopped))
  })
})

const figureCell = `import sys, types, io, struct, zlib
try:
    import matplotlib.pyplot as plt
except ImportError:
    def png(w, h):
        chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
        rows = b''.join(b'\\x00' + b''.join(bytes([(x * 40) % 256, (y * 40) % 256, 128]) for x in range(w)) for y in range(h))
        return b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')
    class Figure:
        def savefig(self, buf, format='png'):
            buf.write(png(6, 4))
    figs = {}
    plt = types.ModuleType('matplotlib.pyplot')
    plt.plot = lambda *a, **k: figs.setdefault(1, Figure())
    plt.get_fignums = lambda: sorted(figs)
    plt.figure = lambda num=None: figs.setdefault(num or 1, Figure())
    plt.close = lambda which=None: figs.clear()
    sys.modules['matplotlib.pyplot'] = plt
plt.plot([1, 2, 3], [1, 4, 9])
None`
