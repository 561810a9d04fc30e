// The MCP server with the official TypeScript client (@modelcontextprotocol/sdk):
// over the daemon's streamable HTTP (/mcp) and over `hutch mcp`'s stdio.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { BOOT_TIMEOUT_MS, HUTCH_BIN, HUTCH_URL } from '../lib.mjs'

const clients = []
after(async () => { for (const c of clients) await c.close() })

async function connect (transport) {
  const client = new Client({ name: 'hutch-conformance', version: '1.0.0' })
  await client.connect(transport)
  clients.push(client)
  return client
}

const texts = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')

// A cell whose value offers a PNG: a 2×1 image made with the standard library.
const pngCell = `import struct, zlib
class Dot:
    def _repr_png_(self):
        chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
        raw = b'\\x00' + b'\\xff\\x00\\x00' * 2
        return b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 2, 1, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
    def __repr__(self):
        return 'a dot'
answer = 42
Dot()`

describe('MCP', () => {
  test('streamable HTTP: tools, code with an image, a command with progress, files, an S-code error', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const client = await connect(new StreamableHTTPClientTransport(new URL(HUTCH_URL + '/mcp')))
    const { tools } = await client.listTools()
    const runCode = tools.find((t) => t.name === 'run_code')
    assert.ok(runCode, 'run_code is listed')
    assert.deepEqual(runCode.inputSchema.required, ['code'])
    assert.equal(runCode.inputSchema.properties.code.type, 'string')
    assert.equal(tools.find((t) => t.name === 'file_read').annotations.readOnlyHint, true)

    const cell = await client.callTool({ name: 'run_code', arguments: { code: pngCell } }, CallToolResultSchema, { timeout: BOOT_TIMEOUT_MS })
    const image = cell.content.find((c) => c.type === 'image')
    assert.equal(image?.mimeType, 'image/png')
    assert.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString(), 'PNG')
    assert.match(texts(cell), /a dot/)
    const number = await client.callTool({ name: 'run_code', arguments: { code: 'answer' } })
    assert.equal(texts(number), '42')

    const progress = []
    const command = await client.callTool({ name: 'run_command', arguments: { command: 'for i in 1 2 3; do echo tick $i; sleep 1; done' } },
      CallToolResultSchema, { onprogress: (p) => progress.push(p.message), timeout: 60_000 })
    assert.deepEqual(progress.join(''), 'tick 1\ntick 2\ntick 3\n', 'progress came before the result')
    assert.match(texts(command), /exit code 0/)

    await client.callTool({ name: 'file_write', arguments: { path: '/tmp/mcp.txt', content: 'from mcp' } })
    assert.equal(texts(await client.callTool({ name: 'file_read', arguments: { path: '/tmp/mcp.txt' } })), 'from mcp')
    const missing = await client.callTool({ name: 'file_read', arguments: { path: '/no/such/file' } })
    assert.equal(missing.isError, true)
    assert.match(texts(missing), /^S211: /)
  })

  test('stdio: hutch mcp', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const client = await connect(new StdioClientTransport({ command: HUTCH_BIN, args: ['mcp'], env: { ...process.env, HUTCH_URL } }))
    const { tools } = await client.listTools()
    assert.ok(tools.length >= 10)
    const res = await client.callTool({ name: 'run_code', arguments: { code: '1 + 1' } }, CallToolResultSchema, { timeout: BOOT_TIMEOUT_MS })
    assert.equal(texts(res), '2')
  })
})
