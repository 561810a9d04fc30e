// Shared helpers of the conformance suite. run.sh starts the daemon and
// sets III_URL (engine WebSocket), HUTCH_URL (HTTP API) and HUTCH_BIN.
import { spawn } from 'node:child_process'
import { webcrypto } from 'node:crypto'
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { registerWorker } from 'iii-sdk'

// Node 18 (Debian 12's nodejs) has no global crypto, which the SDK uses
// for invocation ids.
globalThis.crypto ??= webcrypto

export const III_URL = process.env.III_URL ?? 'ws://localhost:49134'
export const HUTCH_URL = process.env.HUTCH_URL ?? 'http://127.0.0.1:3111'
export const HUTCH_BIN = process.env.HUTCH_BIN ?? 'hutch'

// Generous bounds: the first create of an image may build it.
export const BOOT_TIMEOUT_MS = 300_000

let worker

// engine returns this test file's iii-sdk worker, connected to hutch the way
// the seeds' code is: registerWorker(url), then iii.trigger(...).
export function engine () {
  worker ??= registerWorker(III_URL, { workerName: 'hutch-conformance' })
  return worker
}

// closeEngine disconnects the worker, and stops every sandbox a test left
// running (the seeds' samples do not always stop theirs).
export async function closeEngine () {
  const { sandboxes } = await http('GET', '/v1/sandboxes')
  await Promise.all(sandboxes.filter((s) => !s.stopped)
    .map((s) => http('DELETE', `/v1/sandboxes/${s.sandbox_id}?wait=true`)))
  await worker?.shutdown()
  worker = undefined
}

// http calls the REST API and returns the decoded body; an error status
// throws with the envelope.
export async function http (method, path, body) {
  const res = await fetch(HUTCH_URL + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const json = await res.json()
  if (!res.ok) {
    const err = new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    err.status = res.status
    err.envelope = json.error
    throw err
  }
  return json
}

// sh runs a bash script (a seed's shell sample with `iii ...` spelled
// `hutch ...`) in a fresh directory, with hutch on PATH and HUTCH_URL set, and
// returns its output and exit status. pipefail makes a failing command
// before `| jq` fail the script.
export function sh (script, { cwd } = {}) {
  const dir = cwd ?? mkdtempSync(join(tmpdir(), 'hutch-conformance-sh-'))
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: dir,
      env: { ...process.env, HUTCH_URL },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (b) => { stdout += b })
    child.stderr.on('data', (b) => { stderr += b })
    child.on('error', reject)
    child.on('close', (code) => {
      if (!cwd) rmSync(dir, { recursive: true, force: true })
      resolve({ stdout, stderr, code })
    })
  })
}

// envelopeOf parses the S-code envelope of an InvocationError exactly as
// seed 000's error-handling example does.
export function envelopeOf (err) {
  const match = err?.message?.match(/handler error:\s*(\{.*\})/)
  return match ? JSON.parse(match[1]) : null
}

// rejects awaits p and returns what it threw, failing when it resolved.
export async function rejects (p) {
  try {
    const v = await p
    throw new Error(`expected a rejection, got ${JSON.stringify(v)}`)
  } catch (err) {
    if (err.message?.startsWith('expected a rejection')) throw err
    return err
  }
}

// E2B's SDKs: run.sh sets E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY
// (owner e2b-alice) and E2B_OTHER_API_KEY (owner e2b-bob).
export const E2B_OTHER_API_KEY = process.env.E2B_OTHER_API_KEY

// killE2B kills every sandbox the E2B key's owner has left (the REST
// API's closeEngine sees only the local user's).
export async function killE2B (Sandbox) {
  const paginator = Sandbox.list({ query: { state: ['running', 'paused'] } })
  while (paginator.hasNext) {
    for (const s of await paginator.nextItems()) await Sandbox.kill(s.sandboxId)
  }
}

// startDaemon starts a daemon of its own (HUTCH_BIN serve) on free loopback
// ports and a private data dir, with the given lines added to the worker
// config run.sh uses (the shared image cache, python allowed), for tests
// that need a configuration the suite's daemon must not have (api_tokens
// turn on multi-owner mode). maxSandboxes is its max_concurrent_sandboxes.
// It resolves to {url, stop}; stop ends it with SIGTERM and removes its
// directory.
export async function startDaemon (extraConfig = '', { maxSandboxes = 8 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-conformance-daemon-'))
  const cache = process.env.HUTCH_TEST_IMAGE_CACHE ?? '/var/tmp/hutch-image-cache'
  writeFileSync(join(dir, 'config.yaml'), `workers:
  - name: iii-sandbox
    config:
      auto_install: true
      image_allowlist:
        - python
      default_idle_timeout_secs: 300
      max_concurrent_sandboxes: ${maxSandboxes}
      default_cpus: 1
      default_memory_mb: 512
      image_cache_dir: ${cache}
${extraConfig.replace(/^/gm, '      ')}
`)
  const log = join(dir, 'daemon.log')
  const child = spawn(HUTCH_BIN, ['serve', '--config', join(dir, 'config.yaml'), '--data-dir', join(dir, 'data'),
    '--listen', '127.0.0.1:0', '--engine-listen', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', openSync(log, 'w')] })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
    rmSync(dir, { recursive: true, force: true })
  }
  for (let i = 0; i < 3000; i++) {
    const line = readFileSync(log, 'utf8').split('\n').find((l) => l.includes('"msg":"hutch serving"'))
    if (line) return { url: `http://${JSON.parse(line).listen}`, stop, log }
    if (child.exitCode !== null) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const tail = readFileSync(log, 'utf8').slice(-2000)
  await stop()
  throw new Error(`hutch serve did not start:\n${tail}`)
}
