// hutch's JavaScript kernel: runs cells sent on stdin, one JSON object a
// line ({"id", "code"}), in one REPL context that outlives them (top-level
// await, require and import of installed modules), and answers each with
// a line "\x1e" NONCE " " ID "\n" on stderr, then a result line on stdout:
// "\x1e" NONCE " " JSON "\n", both after the cell's own output. SIGINT interrupts a running cell: a synchronous one
// through vm's breakOnSigint, an awaiting one by abandoning its promise.
// Once SIGINT is its own, it says so on stderr: "\x1e" NONCE " ready\n".
// A cell with a top-level await runs through the REPL's own evaluation,
// which rewrites it; any other runs as a script in the REPL's context.
const fs = require('fs')
const readline = require('readline')
const repl = require('repl')
const util = require('util')
const vm = require('vm')
const { PassThrough } = require('stream')

const mark = '\x1e' + (process.env.HUTCH_INTERP_NONCE || '') + ' '
delete process.env.HUTCH_INTERP_NONCE
// A TypeScript context transpiles each cell with what the image carries.
const typescript = process.env.HUTCH_INTERP_TYPESCRIPT === '1'
delete process.env.HUTCH_INTERP_TYPESCRIPT
const transpile = typescript ? findTranspiler() : (code) => code
const server = repl.start({ input: new PassThrough(), output: new PassThrough(), terminal: false, prompt: '' })
// The REPL's own console writes to its output; cells print to stdout.
server.context.console = console
let pending = null
// An error thrown by a cell, or a promise it awaits rejecting, reaches the
// REPL's domain instead of the eval callback.
server._domain.removeAllListeners('error')
server._domain.on('error', (err) => settle([err, undefined]))
process.on('SIGINT', () => settle([new Error('Interrupted'), undefined]))
// Ready: a SIGINT from now on is the kernel's own (before, it would end it).
fs.writeSync(2, mark + 'ready\n')

function settle (outcome) {
  const p = pending
  pending = null
  if (p) p(outcome)
}

// findTranspiler is node's own type stripping (node 22.13 and later), or
// the typescript package: the context's node_modules (NODE_PATH), npm's
// global one, or Debian's node-typescript. null when there is none.
function findTranspiler () {
  const mod = require('module')
  if (typeof mod.stripTypeScriptTypes === 'function') return (code) => mod.stripTypeScriptTypes(code, { mode: 'transform' })
  const places = ['typescript', '/usr/local/lib/node_modules/typescript', '/usr/lib/node_modules/typescript',
    '/usr/share/nodejs/typescript', '/usr/lib/nodejs/typescript']
  for (const place of places) {
    let ts
    try { ts = require(place) } catch { continue }
    const compilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS }
    return (code) => ts.transpileModule(code, { compilerOptions, reportDiagnostics: false }).outputText
  }
  return null
}

function run (code) {
  if (!transpile) {
    const err = new Error('this image has no TypeScript transpiler: install the typescript package ' +
      '(npm install -g typescript, or Debian\'s node-typescript), or use node 22.13 or later')
    err.name = 'TypeScriptUnavailable'
    return Promise.resolve([err, undefined])
  }
  try {
    code = transpile(code)
  } catch (err) {
    return Promise.resolve([err, undefined])
  }
  let script
  try {
    script = new vm.Script(code, { filename: '<cell>' })
  } catch (err) {
    if (err instanceof SyntaxError && /await/.test(err.message)) return runAwaiting(code)
    return Promise.resolve([err, undefined])
  }
  try {
    return Promise.resolve([null, script.runInContext(server.context, { breakOnSigint: true, displayErrors: false })])
  } catch (err) {
    return Promise.resolve([err, undefined])
  }
}

function runAwaiting (code) {
  return new Promise((resolve) => {
    pending = resolve
    try {
      server.eval(code + '\n', server.context, '<cell>', (err, value) => { if (pending === resolve) settle([err, value]) })
    } catch (err) {
      settle([err, undefined])
    }
  })
}

// failure describes what a cell threw, its stack without the kernel's
// frames. Errors of the REPL's context are not this context's Error.
function failure (err) {
  if (err && typeof err === 'object' && err.err) err = err.err // an incomplete cell
  if (!err || typeof err !== 'object' || typeof err.stack !== 'string') {
    return { name: 'Error', value: util.inspect(err), traceback: [] }
  }
  const [head, ...frames] = err.stack.split('\n')
  return { name: String(err.name), value: String(err.message), traceback: [head, ...frames.filter((l) => l.includes('<cell>'))] }
}

let count = 0
const lines = readline.createInterface({ input: process.stdin, terminal: false })
const queue = []
let busy = false
lines.on('line', (line) => { queue.push(line); next() })
lines.on('close', () => { if (!busy && queue.length === 0) process.exit(0) })

async function next () {
  if (busy) return
  const line = queue.shift()
  if (line === undefined) return
  busy = true
  let req
  try { req = JSON.parse(line) } catch { busy = false; return next() }
  count++
  const msg = { id: req.id, execution_count: count }
  // The cell's own variables, then the context's back once it ends.
  const cellEnv = req.env && typeof req.env === 'object' ? req.env : {}
  const saved = Object.keys(cellEnv).map((k) => [k, process.env[k]])
  for (const [k, v] of Object.entries(cellEnv)) process.env[k] = String(v)
  const [err, value] = await run(String(req.code))
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k]
    else process.env[k] = v
  }
  if (err) {
    msg.status = 'error'
    msg.error = failure(err)
  } else {
    msg.status = 'ok'
    if (value !== undefined) msg.data = { 'text/plain': util.inspect(value) }
  }
  fs.writeSync(2, mark + msg.id + '\n') // stderr's end, then the result
  fs.writeSync(1, mark + JSON.stringify(msg) + '\n')
  busy = false
  next()
}
