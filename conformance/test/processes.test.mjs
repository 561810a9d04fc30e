// Processes over the engine through the real iii-sdk: a streamed exec's
// events arrive on a channel as the command writes them, and background
// processes, stdin and terminals work through the same functions as over
// REST. Streaming is shown without timing: each line waits for a gate file
// the test writes only after it has received the line before.
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ChannelReader } from 'iii-sdk/channel'
import { BOOT_TIMEOUT_MS, III_URL, closeEngine, engine } from '../lib.mjs'

const iii = engine()
after(closeEngine)

const call = (function_id, payload, timeoutMs = 120_000) => iii.trigger({ function_id, payload, timeoutMs })
const create = async () => (await call('sandbox::create', { image: 'python' }, BOOT_TIMEOUT_MS)).sandbox_id

describe('processes over the engine', () => {
  test('sandbox::exec::stream delivers each line while the command runs', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const sandbox_id = await create()
    const script = 'i=1; while [ $i -le 3 ]; do echo line$i; while [ ! -e /tmp/gate-$i ]; do sleep 0.02; done; i=$((i+1)); done; echo bye >&2; exit 4'
    const { stream } = await call('sandbox::exec::stream', { sandbox_id, cmd: 'sh', args: ['-c', script] })
    const reader = new ChannelReader(III_URL, stream)
    const seen = []
    const ended = new Promise((resolve) => {
      reader.onMessage(async (raw) => {
        const m = JSON.parse(raw)
        seen.push(m)
        const n = m.type === 'event' && m.event === 'stdout' && m.data.data.match(/^line(\d)\n$/)?.[1]
        if (n) await call('sandbox::fs::write', { sandbox_id, path: `/tmp/gate-${n}`, content: '' })
        if (m.type === 'result' || m.type === 'error') resolve(m)
      })
    })
    const bytes = await reader.readAll()
    const last = await ended
    assert.equal(bytes.length, 0, 'output travels as events, not bytes')
    const events = seen.filter((m) => m.type === 'event')
    assert.equal(events[0].event, 'start')
    assert.ok(events[0].data.pid > 0)
    assert.deepEqual(events.filter((m) => m.event === 'stdout').map((m) => m.data.data), ['line1\n', 'line2\n', 'line3\n'])
    assert.deepEqual(events.filter((m) => m.event === 'stderr').map((m) => m.data.data), ['bye\n'])
    assert.equal(events.at(-1).event, 'exit')
    assert.equal(events.at(-1).data.exit_code, 4)
    assert.equal(last.type, 'result', JSON.stringify(last))
    assert.equal(last.result.exit_code, 4)
    await call('sandbox::stop', { sandbox_id, wait: true })
  })

  test('a background process with stdin, and a terminal, through sandbox::process::*', { timeout: BOOT_TIMEOUT_MS }, async () => {
    const sandbox_id = await create()
    const { pid } = await call('sandbox::process::start', { sandbox_id, cmd: 'cat', stdin: true, tag: 'echo' })
    const listed = (await call('sandbox::process::list', { sandbox_id })).processes.find((p) => p.pid === pid)
    assert.deepEqual([listed.hutch, listed.tag, listed.command], [true, 'echo', 'cat'])
    await call('sandbox::process::stdin', { sandbox_id, pid, data: 'hello ' })
    await call('sandbox::process::stdin', { sandbox_id, pid, data: 'engine\n', close: true })
    const end = await call('sandbox::process::wait', { sandbox_id, pid, timeout_ms: 60_000 })
    assert.deepEqual([end.state, end.exit_code], ['exited', 0])
    const out = await call('sandbox::process::output', { sandbox_id, pid })
    assert.equal(out.stdout.data, 'hello engine\n')

    const term = await call('sandbox::process::start', { sandbox_id, cmd: 'sh', pty: { cols: 80, rows: 24 } })
    // The screen so far, once it shows re (the terminal answers in its time).
    const screenShows = async (re) => {
      for (;;) {
        const screen = (await call('sandbox::process::output', { sandbox_id, pid: term.pid })).stdout.data
        if (re.test(screen)) return screen
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
    await call('sandbox::process::stdin', { sandbox_id, pid: term.pid, data: 'stty size\n' })
    await screenShows(/24 80\r\n/)
    await call('sandbox::process::resize', { sandbox_id, pid: term.pid, cols: 100, rows: 30 })
    await call('sandbox::process::stdin', { sandbox_id, pid: term.pid, data: 'stty size; exit 2\n' })
    const termEnd = await call('sandbox::process::wait', { sandbox_id, pid: term.pid, timeout_ms: 60_000 })
    assert.equal(termEnd.exit_code, 2)
    await screenShows(/30 100\r\n/)

    const missing = await call('sandbox::process::get', { sandbox_id, pid: 99999 }).catch((e) => e)
    assert.match(String(missing.message ?? missing), /S230/)
    await call('sandbox::stop', { sandbox_id, wait: true })
  })
})
