// The Python SDK's tests (unittest, standard library only) and every
// example of its README, against this suite's daemon.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { HUTCH_URL } from '../lib.mjs'

const sdk = fileURLToPath(new URL('../../sdk/python', import.meta.url))
const env = { ...process.env, HUTCH_URL, PYTHONPATH: sdk }

function python (args, input) {
  const res = spawnSync('python3', args, { cwd: sdk, env, input, encoding: 'utf8', timeout: 600_000 })
  assert.equal(res.status, 0, `python3 ${args.join(' ')}:\n${res.stdout}\n${res.stderr}`)
  return res
}

describe('Python SDK', () => {
  test('its unittest suite passes', { timeout: 600_000 }, () => {
    python(['-m', 'unittest', 'discover', '-s', 'tests'])
  })
  test('its README examples run as written', { timeout: 600_000 }, () => {
    const readme = readFileSync(`${sdk}/README.md`, 'utf8')
    const blocks = [...readme.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1])
    assert.ok(blocks.length >= 2)
    for (const code of blocks) python(['-'], code)
  })
})
