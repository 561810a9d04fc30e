// The processes of a sandbox: what runs in it (sandbox::process::list),
// the output of those hutch started, and a form that starts a command in
// the background and follows its output. Output is put in text nodes only.
import { api, sse, q } from './api.js'
import { h, replace, bytes, button, decodeChunk, flash } from './dom.js'

// maxFollowed bounds the outputs followed at once.
const maxFollowed = 3

// processPanel returns the panel's element for sandbox id.
export function processPanel (id, signal) {
  const base = `/v1/sandboxes/${encodeURIComponent(id)}`
  const cmd = h('input', { type: 'text', name: 'command', class: 'mono', placeholder: 'a shell command, e.g. python3 -m http.server 8000', size: 60 })
  const body = h('tbody')
  const outputs = h('div', { id: 'outputs' })

  async function list () {
    const res = await api('GET', `${base}/processes`, undefined, { signal })
    replace(body, res.processes.map((p) => h('tr', { 'data-pid': p.pid },
      h('td', { class: 'num' }, String(p.pid)), h('td', null, p.user), h('td', null, p.state),
      h('td', { class: 'num' }, `${p.cpu_percent.toFixed(1)}%`), h('td', { class: 'num' }, bytes(p.rss_bytes)),
      h('td', { class: 'mono' }, p.command), h('td', null, p.tag ?? ''),
      h('td', null, p.hutch ? button('Output', () => show(p.pid, p.command)) : null))))
  }

  // show follows a hutch process's output into a new panel. A browser
  // keeps six HTTP/1.1 connections per host, and each followed output
  // holds one: beyond maxFollowed the oldest panel stops following.
  const followed = []
  function show (pid, title) {
    const pre = h('pre', { class: 'output', 'data-output-pid': pid })
    const state = h('span', { class: 'muted' }, 'running')
    const stop = new AbortController()
    const s = AbortSignal.any([signal, stop.signal])
    const panel = h('div', { class: 'panel' }, h('div', { class: 'crumbs' }, h('strong', { class: 'mono' }, `${pid}: ${title}`), state,
      button('Kill', () => api('DELETE', `${base}/processes/${pid}`)),
      button('Close', () => { stop.abort(); panel.remove() })), pre)
    outputs.prepend(panel)
    followed.push(stop)
    while (followed.length > maxFollowed) followed.shift().abort()
    sse(`${base}/processes/${pid}/output${q({ follow: true })}`, (e) => {
      if (e.type === 'stdout' || e.type === 'stderr') {
        pre.append(h('span', { class: e.type }, decodeChunk(e.data)))
        pre.scrollTop = pre.scrollHeight
      } else if (e.type === 'exit' || e.type === 'result') {
        const p = e.data?.process ?? e.data
        if (p?.state === 'exited' || e.type === 'exit') state.textContent = `exited${p?.exit_code != null ? ` (${p.exit_code})` : ''}`
      } else if (e.type === 'error') {
        state.textContent = e.data?.error?.message ?? 'error'
      }
    }, s).catch((err) => {
      if (signal.aborted) return
      state.textContent = stop.signal.aborted ? 'no longer followed (Output follows it again)' : err.message
    }).finally(() => {
      const i = followed.indexOf(stop)
      if (i >= 0) followed.splice(i, 1)
    })
  }

  const run = button('Run in background', async () => {
    if (!cmd.value.trim()) return
    const res = await api('POST', `${base}/processes`, { argv: ['/bin/sh', '-c', cmd.value], tag: 'console' })
    show(res.pid, cmd.value)
    cmd.value = ''
    await list()
  }, { class: 'primary', id: 'run' })
  cmd.addEventListener('keydown', (e) => { if (e.key === 'Enter') run.click() })

  const el = h('div', null,
    h('div', { class: 'row panel' }, h('label', null, 'Command', cmd), run, button('Refresh', list)),
    outputs,
    h('table', { id: 'processes' }, h('thead', null, h('tr', null,
      ['PID', 'User', 'State', 'CPU', 'RSS', 'Command', 'Tag', ''].map((t) => h('th', null, t)))), body))
  return { el, list: () => list().catch((err) => flash(err.message, true)) }
}
