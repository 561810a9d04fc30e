// @hutch/sdk's tests, its type declarations (tsc), and every example of
// its README, against this suite's daemon.
import { before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HUTCH_URL } from '../lib.mjs'

const sdk = fileURLToPath(new URL('../../sdk/typescript', import.meta.url))
const tsc = fileURLToPath(new URL('../node_modules/.bin/tsc', import.meta.url))
// Without the runner's own context, a child `node --test` runs its tests
// as a top-level run.
const env = { ...process.env, HUTCH_URL }
delete env.NODE_TEST_CONTEXT

function run (cmd, args, cwd) {
  const res = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 600_000 })
  assert.equal(res.status, 0, `${cmd} ${args.join(' ')}:\n${res.stdout}\n${res.stderr}`)
  return res.stdout
}

// project makes a directory where '@hutch/sdk' resolves to the SDK.
function project () {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-sdk-'))
  mkdirSync(join(dir, 'node_modules', '@hutch'), { recursive: true })
  symlinkSync(sdk, join(dir, 'node_modules', '@hutch', 'sdk'))
  return dir
}

describe('TypeScript SDK', () => {
  before(() => {
    // Its dependency (ws, for terminals), as its lock file pins it.
    if (!existsSync(join(sdk, 'node_modules', 'ws'))) run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], sdk)
  })

  test('its tests pass', { timeout: 600_000 }, () => {
    assert.match(run(process.execPath, ['--test', '--test-reporter=tap', 'test/'], sdk), /# pass [1-9]/)
  })

  test('its declarations type-check a program that uses them', { timeout: 120_000 }, () => {
    const dir = project()
    try {
      writeFileSync(join(dir, 'types.ts'), readFileSync(join(sdk, 'test', 'types.ts')))
      run(tsc, ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext',
        '--lib', 'es2022,dom,esnext.disposable', 'types.ts'], dir)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('its README examples run as written', { timeout: 600_000 }, () => {
    const blocks = [...readFileSync(join(sdk, 'README.md'), 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
    assert.ok(blocks.length >= 2)
    const dir = project()
    try {
      blocks.forEach((code, i) => {
        // console.assert only prints; the examples must not print.
        writeFileSync(join(dir, `example${i}.mjs`), code.replaceAll('console.assert(', 'assert.ok(').replace(/^/, "import assert from 'node:assert/strict'\n"))
        run(process.execPath, [`example${i}.mjs`], dir)
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
