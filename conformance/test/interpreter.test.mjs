// The code interpreter over the engine through the real iii-sdk: a cell's
// output and result arrive on a channel, and a context keeps its state.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ChannelReader } from 'iii-sdk/channel'
import { BOOT_TIMEOUT_MS, III_URL, closeEngine, engine, envelopeOf, rejects } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const call = (function_id, payload, timeoutMs = 120_000) => iii.trigger({ function_id, payload, timeoutMs })

// run runs a cell and returns its events and result.
async function run (payload) {
  const { stream } = await call('sandbox::interpreter::run', payload)
  const reader = new ChannelReader(III_URL, stream)
  const seen = []
  const ended = new Promise((resolve) => {
    reader.onMessage((raw) => {
      const m = JSON.parse(raw)
      seen.push(m)
      if (m.type === 'result' || m.type === 'error') resolve(m)
    })
  })
  await reader.readAll()
  const last = await ended
  assert.equal(last.type, 'result', JSON.stringify(last))
  return { events: seen.filter((m) => m.type === 'event'), result: last.result }
}

describe('interpreter over the engine', () => {
  test('a context keeps its variables; output streams before the result', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await call('sandbox::create', { image: 'python' }, BOOT_TIMEOUT_MS)
    const { context_id } = await call('sandbox::interpreter::context::create', { sandbox_id, language: 'python' })
    await run({ context_id, code: 'x = 41' })
    const { events, result } = await run({ context_id, code: 'print("hi")\nx + 1' })
    assert.deepEqual(events.filter((e) => e.event === 'stdout').map((e) => e.data.data).join(''), 'hi\n')
    assert.equal(result.data['text/plain'], '42')
    assert.equal(result.execution_count, 2)
    const failed = await run({ sandbox_id, code: 'raise KeyError("k")' })
    assert.equal(failed.result.status, 'error')
    assert.equal(failed.result.error.name, 'KeyError')
    const { contexts } = await call('sandbox::interpreter::context::list', { sandbox_id })
    assert.equal(contexts.length, 2, 'the named context and the default one')
    assert.equal(envelopeOf(await rejects(call('sandbox::interpreter::interrupt', { context_id: 'nope' })))?.code, 'S240')
    await call('sandbox::interpreter::context::delete', { context_id })
    await call('sandbox::stop', { sandbox_id, wait: true })
  })
})
