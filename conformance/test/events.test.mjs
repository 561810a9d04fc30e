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
    assert.deepEqual(events.map((e) => e.type),
      ['sandbox.created', 'sandbox.ready', 'exec.started', 'exec.finished', 'sandbox.stopped', 'custom.conformance'])
    assert.equal(events[4].data.cause, 'request')
    assert.deepEqual(events[5].data, { n: 1 })
    const ids = events.map((e) => BigInt(e.id))
    assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), 'ids increase')
    assert.equal(envelopeOf(await rejects(call('sandbox::events::publish', { topic: 'Not A Topic' })))?.code, 'S001')
  })

  test('a worker\'s trigger gets a sandbox\'s life as it happens, in order', { timeout: BOOT_TIMEOUT_MS }, async () => {
    // The unmodified SDK: a function of this worker, and a trigger of
    // hutch's sandbox::event type that calls it with each event.
    const all = []
    let mine, stopped
    const waiting = new Promise((resolve) => { stopped = resolve })
    iii.registerFunction('conformance::on_event', async (ev) => {
      all.push(ev)
      // Its idle stop comes seconds after the create answered.
      if (ev.type === 'sandbox.stopped' && ev.sandbox_id === mine) stopped(ev.sandbox_id)
      return {}
    })
    // Registered before the create is sent: hutch reads them in order.
    const trigger = iii.registerTrigger({ type: 'sandbox::event', function_id: 'conformance::on_event', config: { type: '*' } })
    const { sandbox_id } = await call('sandbox::create', { image: 'python', idle_timeout_secs: 2 }, BOOT_TIMEOUT_MS)
    mine = sandbox_id
    await call('sandbox::exec', { sandbox_id, cmd: 'true' })
    assert.equal(await waiting, sandbox_id)
    trigger.unregister()
    const got = all.filter((e) => e.sandbox_id === sandbox_id)
    assert.deepEqual(got.map((e) => e.type), ['sandbox.created', 'sandbox.ready', 'exec.started', 'exec.finished', 'sandbox.stopped'])
    assert.equal(got[3].data.exit_code, 0)
    assert.equal(got[4].data.cause, 'idle')
  })
})

describe('jobs over the engine', () => {
  test('a queued job runs in a sandbox of its own; one that keeps failing is dead-lettered and retried', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const job = await call('sandbox::job::submit', { image: 'python', argv: ['sh', '-c', 'echo from a job'] })
    assert.equal(job.state, 'queued')
    let info = job
    while (info.state === 'queued' || info.state === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 200))
      info = await call('sandbox::job::get', { job_id: job.job_id })
    }
    assert.equal(info.state, 'succeeded')
    assert.equal(info.result.stdout, 'from a job\n')
    const failing = await call('sandbox::job::submit', { image: 'python', cmd: 'false', retry_on_exit: true, max_retries: 0 })
    let dead
    for (;;) {
      const { jobs } = await call('sandbox::job::dlq', {})
      dead = jobs.find((j) => j.job_id === failing.job_id)
      if (dead) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    assert.equal(dead.attempts, 1)
    assert.equal((await call('sandbox::job::retry', { job_id: dead.job_id })).state, 'queued')
    assert.equal(envelopeOf(await rejects(call('sandbox::job::submit', { cmd: 'true' })))?.code, 'S001')
    assert.equal(envelopeOf(await rejects(call('sandbox::job::get', { job_id: 'nope' })))?.code, 'S002')
  })
})
