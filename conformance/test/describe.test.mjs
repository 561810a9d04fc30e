// Functions describe themselves over the engine, as the seeds tell users
// to ask ("iii get function info"): descriptions and JSON Schemas, the
// workers connected and the trigger types.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { closeEngine, engine, http } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const call = (function_id, payload) => iii.trigger({ function_id, payload, timeoutMs: 30_000 })

describe('function info', () => {
  test('engine::functions::list and ::info carry schemas; workers and triggers are listed', async () => {
    const { functions } = await call('engine::functions::list', {})
    const ids = functions.map((f) => f.function_id)
    assert.ok(ids.includes('sandbox::exec') && ids.includes('sandbox::fs::read'))
    assert.ok(!ids.some((id) => id.startsWith('engine::')), 'internal functions only with include_internal')
    const [exec] = (await call('engine::functions::info', { function_id: 'sandbox::exec' })).functions
    assert.equal(exec.request_format.type, 'object')
    assert.equal(exec.request_format.properties.sandbox_id.type, 'string')
    assert.equal(exec.response_format.properties.exit_code !== undefined, true)
    assert.deepEqual(await http('GET', '/v1/functions/sandbox::exec'), exec, 'the same over HTTP')
    const { workers } = await call('engine::workers::list', {})
    assert.ok(workers.some((w) => w.name === 'hutch-conformance'), JSON.stringify(workers))
    const { triggers } = await call('engine::triggers::list', {})
    assert.deepEqual(triggers.map((t) => t.id), ['sandbox::event'])
    await call('engine::log::info', { message: 'hello from the conformance suite' })
  })
})
