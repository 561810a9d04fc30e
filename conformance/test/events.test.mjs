// Events over the engine through the real iii-sdk: what happens to a
// sandbox is listed in order, and published events join the log.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { BOOT_TIMEOUT_MS, closeEngine, engine, envelopeOf, rejects } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const call = (function_id, payload, timeoutMs = 120_000) => iii.trigger({ function_id, payload, timeoutMs })

describe('events over the engine', () => {
  test('a sandbox\'s life is listed in order; published events join it', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const { sandbox_id } = await call('sandbox::create', { image: 'python' }, BOOT_TIMEOUT_MS)
    await call('sandbox::exec', { sandbox_id, cmd: 'true' })
    await call('sandbox::stop', { sandbox_id, wait: true })
    const published = await call('sandbox::events::publish', { topic: 'conformance', sandbox_id, data: { n: 1 } })
    assert.equal(published.type, 'custom.conformance')
    const { events } = await call('sandbox::events::list', { sandbox_id })
    assert.deepEqual(events.map((e) => e.type), ['sandbox.created', 'exec.finished', 'sandbox.stopped', 'custom.conformance'])
    assert.equal(events[2].data.cause, 'request')
    assert.deepEqual(events[3].data, { n: 1 })
    const ids = events.map((e) => BigInt(e.id))
    assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), 'ids increase')
    assert.equal(envelopeOf(await rejects(call('sandbox::events::publish', { topic: 'Not A Topic' })))?.code, 'S001')
  })
})
