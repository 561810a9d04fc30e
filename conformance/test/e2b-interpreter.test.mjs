// E2B's code interpreter through the stock `@e2b/code-interpreter` SDK:
// state across cells, errors with tracebacks, rich results, contexts in
// Python and JavaScript, state kept across pause and connect, and the
// sandbox's token guarding its interpreter.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { BOOT_TIMEOUT_MS, killE2B } from '../lib.mjs'

after(() => killE2B(Sandbox))

const opts = { timeoutMs: BOOT_TIMEOUT_MS }
const create = (template) => template
  ? Sandbox.create(template, { requestTimeoutMs: BOOT_TIMEOUT_MS })
  : Sandbox.create({ requestTimeoutMs: BOOT_TIMEOUT_MS })

describe('E2B code interpreter', () => {
  test('Python: state across cells, output, an error with its traceback, an HTML result', opts, async () => {
    const sbx = await create()
    await sbx.runCode('x = 41')
    const ex = await sbx.runCode('print("hello"); x + 1')
    assert.equal(ex.logs.stdout.join(''), 'hello\n')
    assert.equal(ex.text, '42')
    assert.equal(ex.results[0].isMainResult, true)
    assert.equal(ex.error, undefined)
    // issue 43: 8, code-interpreter-v1 runs as E2B's does: as user, in its home
    assert.equal((await sbx.runCode('import os; (os.getuid(), os.getcwd())')).text, "(1000, '/home/user')")
    assert.equal((await sbx.commands.run('id -un; pwd')).stdout, 'user\n/home/user\n')

    const failed = await sbx.runCode('def f():\n    return 1 / 0\nf()')
    assert.equal(failed.error.name, 'ZeroDivisionError')
    assert.equal(failed.error.value, 'division by zero')
    assert.match(failed.error.traceback, /line 2, in f/)

    const html = await sbx.runCode('class H:\n    def _repr_html_(self): return "<b>hi</b>"\nH()')
    assert.equal(html.results[0].html, '<b>hi</b>')

    // Output comes in chunks as the cell writes it: compare the streams whole.
    const seen = { out: '', err: '' }
    await sbx.runCode('import sys; print("out"); print("err", file=sys.stderr)', {
      onStdout: (m) => { seen.out += m.line }, onStderr: (m) => { seen.err += m.line }
    })
    assert.deepEqual(seen, { out: 'out\n', err: 'err\n' })
    await sbx.kill()
  })

  test('Python contexts keep their own state; list, restart and remove them', opts, async () => {
    const sbx = await create()
    await sbx.runCode('x = 1')
    const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' })
    assert.equal(ctx.language, 'python')
    const unset = await sbx.runCode('x', { context: ctx })
    assert.equal(unset.error.name, 'NameError')
    await sbx.runCode('y = 2', { context: ctx })
    assert.equal((await sbx.runCode('import os; (y, os.getcwd())', { context: ctx })).text, "(2, '/tmp')")
    assert.equal((await sbx.runCode('x')).text, '1')

    const ids = (await sbx.listCodeContexts()).map((c) => c.id)
    assert.ok(ids.includes(ctx.id))
    await sbx.restartCodeContext(ctx)
    assert.equal((await sbx.runCode('y', { context: ctx })).error.name, 'NameError')
    await sbx.removeCodeContext(ctx)
    assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
    await sbx.kill()
  })

  test('JavaScript: a context and the default js context keep state', opts, async () => {
    const sbx = await create('node')
    const ctx = await sbx.createCodeContext({ language: 'js' })
    assert.equal(ctx.language, 'javascript')
    await sbx.runCode('const y = 5', { context: ctx })
    const ex = await sbx.runCode('console.log("y is", y); y * 2', { context: ctx })
    assert.equal(ex.text, '10')
    assert.equal(ex.logs.stdout.join(''), 'y is 5\n')
    await sbx.runCode('let z = 3', { language: 'js' })
    assert.equal((await sbx.runCode('z + 1', { language: 'js' })).text, '4')
    const failed = await sbx.runCode('null.f', { context: ctx })
    assert.equal(failed.error.name, 'TypeError')
    await sbx.kill()
  })

  test('state survives pause and connect', opts, async () => {
    const sbx = await create()
    await sbx.runCode('kept = "yes"')
    assert.equal(await sbx.pause(), true)
    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal((await again.runCode('kept')).text, "'yes'")
    await again.kill()
  })

  test("the interpreter needs this sandbox's token", opts, async () => {
    const [a, b] = await Promise.all([create(), create()])
    const url = process.env.E2B_SANDBOX_URL + '/execute'
    const post = (token) => fetch(url, {
      method: 'POST',
      headers: { 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': '49999', ...(token && { 'X-Access-Token': token }) },
      body: JSON.stringify({ code: '1' })
    })
    assert.equal((await post()).status, 401)
    assert.equal((await post(b.envdAccessToken)).status, 401)
    const ok = await post(a.envdAccessToken)
    assert.equal(ok.status, 200)
    assert.match(await ok.text(), /"end_of_execution"/)
    await Promise.all([a.kill(), b.kill()])
  })
})
