// One sandbox: its state and actions, cpu/memory charts, a terminal,
// processes, files, exposed ports and its events, live.
import { api, follow, sse, q, token, ApiError } from '../api.js'
import { h, replace, bytes, duration, stateBadge, button, flash, field, safeHref } from '../dom.js'
import { actionButtons, passing } from '../actions.js'
import { Chart } from '../chart.js'
import { fileBrowser } from '../files.js'
import { processPanel } from '../processes.js'

export const name = 'sandbox'

export async function render (root, [id], signal) {
  const base = `/v1/sandboxes/${encodeURIComponent(id)}`
  const head = h('div')
  const info = h('dl', { class: 'kv' })
  const cpu = new Chart('CPU', (v) => `${v.toFixed(1)}%`)
  const mem = new Chart('Memory', (v) => bytes(v))
  const termBox = h('div', null, h('p', { class: 'muted' }, 'Open this tab to start a shell.'))
  const termStatus = h('span', { class: 'muted', id: 'terminal-status' })
  const procs = processPanel(id, signal)
  const files = fileBrowser(id)
  const ports = h('div', { id: 'ports' })
  const evBody = h('tbody')

  let sb = null
  let settle = null
  let watchMetrics = () => {}
  async function refresh () {
    sb = await api('GET', base, undefined, { signal })
    // An event may come while the change is under way ("stopping"): look
    // again until the state settles.
    clearTimeout(settle)
    if (passing.has(sb.state) && !signal.aborted) settle = setTimeout(() => refresh().catch(() => {}), 500)
    watchMetrics()
    replace(head, h('div', { class: 'crumbs' },
      h('h1', null, sb.name ? `${sb.name} ` : '', h('span', { class: 'mono' }, sb.sandbox_id)),
      h('span', { id: 'sandbox-state' }, stateBadge(sb.state)),
      h('span', { class: 'actions' }, actionButtons(sb, (res) => {
        if (res?.sandbox_ids?.length) location.hash = `#/sandbox/${res.sandbox_ids[0]}`
        else return refresh()
      }))))
    const kv = [['Image', sb.image], ['CPUs', sb.cpus], ['Memory', `${sb.memory_mb} MiB`], ['Network', sb.network ? 'yes' : 'no'],
      ['Age', duration(sb.age_secs)], ['Created', sb.created_at], ['Idle timeout', `${sb.idle_timeout_secs}s (${sb.on_idle})`],
      ['Expires', sb.expires_at], ['Stopped', sb.stop_reason], ['Metadata', sb.metadata ? Object.entries(sb.metadata).map(([k, v]) => `${k}=${v}`).join(', ') : null]]
    replace(info, kv.filter(([, v]) => v != null && v !== '').map(([k, v]) => [h('dt', null, k), h('dd', null, String(v))]))
  }

  async function listPorts () {
    const res = await api('GET', `${base}/ports`, undefined, { signal })
    replace(ports, res.ports.length === 0 ? h('p', { class: 'muted' }, 'No exposed ports.') : null,
      res.ports.map((p) => h('p', { 'data-port': p.port }, h('strong', null, `${p.port} `),
        h('a', { href: safeHref(p.host_url || p.url), target: '_blank', rel: 'noopener noreferrer' }, p.host_url || p.url),
        p.public ? h('span', { class: 'muted' }, ' public') : null,
        !p.public && token.get() ? h('span', { class: 'muted' }, ' (needs the token: a browser tab cannot send it; expose it public to open it here)') : null,
        ' ', button('Unexpose', async () => { await api('DELETE', `${base}/ports/${p.port}`); await listPorts() }))))
  }
  const portIn = h('input', { type: 'number', name: 'port', min: '1', max: '65535', placeholder: 'port' })
  const portPublic = h('input', { type: 'checkbox', name: 'public' })

  const tabs = {
    overview: h('div', null, h('div', { class: 'panel' }, info), h('div', { class: 'charts' }, cpu.el, mem.el)),
    terminal: h('div', null, h('div', { class: 'crumbs' }, termStatus), termBox),
    processes: procs.el,
    files: files.el,
    ports: h('div', null, h('div', { class: 'row panel' }, portIn, field('public (anyone with the link)', portPublic), button('Expose', async () => {
      await api('POST', `${base}/ports`, { port: Number(portIn.value), public: portPublic.checked })
      await listPorts()
    }, { id: 'expose' })), ports),
    events: h('table', { class: 'events-list', id: 'sandbox-events' }, h('thead', null, h('tr', null, h('th', null, 'Time'), h('th', null, 'Type'), h('th', null, 'Data'))), evBody)
  }
  let terminal = null
  const bar = h('div', { class: 'tabs' })
  const show = (which) => {
    for (const [k, el] of Object.entries(tabs)) el.hidden = k !== which
    for (const b of bar.children) b.classList.toggle('active', b.dataset.tab === which)
    if (which === 'terminal' && !terminal) {
      import('../terminal.js').then(({ openTerminal }) => { terminal = openTerminal(termBox, id, signal, termStatus) })
        .catch((err) => flash(err.message, true))
    }
    if (which === 'terminal') terminal?.fit()
    if (which === 'processes') procs.list()
    if (which === 'files') files.list().catch((err) => flash(err.message, true))
    if (which === 'ports') listPorts().catch((err) => flash(err.message, true))
  }
  for (const k of Object.keys(tabs)) bar.append(h('button', { type: 'button', 'data-tab': k, onclick: () => show(k) }, k[0].toUpperCase() + k.slice(1)))
  replace(root, head, bar, Object.values(tabs))
  show('overview')
  try {
    await refresh()
  } catch (err) {
    // 404: no such sandbox for this caller; 400: not an id at all.
    if (!(err instanceof ApiError) || (err.status !== 404 && err.status !== 400)) throw err
    replace(root, missing(id, err))
    return
  }

  const addEvent = (e) => evBody.prepend(h('tr', null, h('td', { class: 'mono' }, e.time), h('td', null, e.type),
    h('td', { class: 'mono' }, e.data == null ? '' : JSON.stringify(e.data))))
  const past = await api('GET', `${base}/events?limit=200`, undefined, { signal }).catch(() => ({ events: [] }))
  for (const e of past.events) addEvent(e)
  follow({ sandbox_id: id, after: past.events.at(-1)?.id ?? 'now' }, (e) => {
    addEvent(e)
    if (e.type.startsWith('sandbox.')) refresh().catch(() => {})
  }, signal).catch((err) => flash(err.message, true))

  // The charts read sandbox::metrics::stream while the sandbox runs; the
  // stream ends when it stops or pauses and starts again on its return.
  let metrics = null
  let prev = null
  const sample = (m) => {
    const t = Date.now()
    if (prev) cpu.add(t, Math.max(0, (m.cpu_seconds - prev.cpu) / ((t - prev.t) / 1000) * 100))
    mem.add(t, m.memory_bytes)
    prev = { cpu: m.cpu_seconds, t }
  }
  watchMetrics = () => {
    if (metrics || sb?.state !== 'running' || signal.aborted) return
    prev = null
    metrics = sse(`${base}/metrics/stream${q({ interval_ms: 2000 })}`, (e) => { if (e.type === 'metrics') sample(e.data) }, signal)
      .catch(() => {}).finally(() => { metrics = null })
  }
  watchMetrics()
}

// missing is the page of a sandbox id the API does not know for this
// caller: another owner's sandbox is the same answer.
function missing (id, err) {
  return h('div', { class: 'panel', id: 'sandbox-missing' },
    h('h1', null, 'No such sandbox'),
    h('p', null, 'There is no sandbox ', h('span', { class: 'mono' }, id), ' for you: the id is mistyped, the sandbox belongs to another owner, or it stopped long enough ago that its record is gone (stopped_retention_secs).'),
    h('p', { class: 'muted' }, err.message),
    h('p', null, h('a', { href: '#/sandboxes' }, 'Back to the sandboxes')))
}
