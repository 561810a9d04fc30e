// The sandboxes page: a live list (re-read on every sandbox event, metrics
// every few seconds), filters, and the create form.
import { api, q, follow, every } from '../api.js'
import { h, replace, bytes, duration, stateBadge, field, flash, button } from '../dom.js'
import { actionButtons, exclusive, passing } from '../actions.js'

export const name = 'sandboxes'

export async function render (root, _params, signal) {
  const stateSel = h('select', { name: 'state' }, ['', 'running', 'paused', 'stopped'].map((s) => h('option', { value: s }, s || 'any state')))
  const imageSel = h('select', { name: 'image-filter' }, h('option', { value: '' }, 'any image'))
  const search = h('input', { type: 'search', name: 'search', placeholder: 'id or name' })
  const count = h('span', { class: 'muted' })
  const body = h('tbody')
  const table = h('table', { id: 'sandboxes' },
    h('thead', null, h('tr', null, ['Sandbox', 'Name', 'Image', 'State', 'Age', 'CPU', 'Memory', ''].map((t, i) => h('th', { class: i === 5 || i === 6 ? 'num' : null }, t)))),
    body)
  replace(root,
    h('h1', null, 'Sandboxes'),
    createForm(signal),
    h('div', { class: 'row panel' }, field('State', stateSel), field('Image', imageSel), field('Search', search), count),
    table)

  let list = []
  const usage = new Map() // sandbox id → {cpu, t, pct, mem}
  const draw = () => {
    const st = stateSel.value; const img = imageSel.value; const text = search.value.trim().toLowerCase()
    const shown = list.filter((s) => (!st || s.state === st) && (!img || s.image === img) &&
      (!text || s.sandbox_id.toLowerCase().includes(text) || (s.name ?? '').toLowerCase().includes(text)))
    count.textContent = `${shown.length} of ${list.length}`
    replace(body, shown.map((s) => row(s, s.state === 'running' ? usage.get(s.sandbox_id) : null, reload)))
    const images = [...new Set(list.map((s) => s.image))].sort()
    if (images.join() !== [...imageSel.options].slice(1).map((o) => o.value).join()) {
      const keep = imageSel.value
      replace(imageSel, h('option', { value: '' }, 'any image'), images.map((i) => h('option', { value: i }, i)))
      imageSel.value = keep
    }
  }
  for (const el of [stateSel, imageSel, search]) el.addEventListener('input', draw)

  let pending = null
  async function reload () {
    const res = await api('GET', '/v1/sandboxes', undefined, { signal })
    list = res.sandboxes.sort((a, b) => (a.stopped - b.stopped) || b.created_at.localeCompare(a.created_at))
    draw()
    // An event may come while a change is under way ("stopping"): look
    // again until every state settles.
    if (list.some((s) => passing.has(s.state))) soon(500)
  }
  const soon = (ms = 200) => { if (!signal.aborted) pending ??= setTimeout(() => { pending = null; reload().catch(() => {}) }, ms) }
  await reload()
  follow({ type: 'sandbox.*' }, () => soon(), signal).catch((err) => flash(err.message, true))
  every(5000, signal, async () => {
    await exclusive(() => Promise.all(list.filter((s) => s.state === 'running').slice(0, 100).map(async (s) => {
      const m = await api('GET', `/v1/sandboxes/${encodeURIComponent(s.sandbox_id)}/metrics`, undefined, { signal }).catch(() => null)
      if (!m) return
      const prev = usage.get(s.sandbox_id); const t = performance.now()
      const pct = prev ? Math.max(0, (m.cpu_seconds - prev.cpu) / ((t - prev.t) / 1000) * 100) : null
      usage.set(s.sandbox_id, { cpu: m.cpu_seconds, t, pct, mem: m.memory_bytes })
    })))
    await reload()
  })
}

function row (s, u, reload) {
  return h('tr', { 'data-sandbox': s.sandbox_id },
    h('td', { class: 'mono' }, h('a', { href: `#/sandbox/${s.sandbox_id}` }, s.sandbox_id)),
    h('td', null, s.name ?? ''),
    h('td', null, s.image),
    h('td', { class: 'state-cell' }, stateBadge(s.state), s.stop_reason ? h('span', { class: 'muted' }, ` ${s.stop_reason}`) : null),
    h('td', null, duration(s.age_secs)),
    h('td', { class: 'num', 'data-cpu': '' }, u?.pct != null ? `${u.pct.toFixed(1)}%` : '–', h('span', { class: 'muted' }, ` /${s.cpus}`)),
    h('td', { class: 'num', 'data-memory': u ? String(u.mem) : null }, u ? bytes(u.mem) : '–', h('span', { class: 'muted' }, ` /${s.memory_mb} MiB`)),
    h('td', null, h('div', { class: 'actions' }, actionButtons(s, () => reload().catch(() => {})))))
}

// createForm is the create form with the common options.
function createForm (signal) {
  const image = h('select', { name: 'image' })
  const template = h('select', { name: 'template' }, h('option', { value: '' }, 'none'))
  const cpus = h('input', { type: 'number', name: 'cpus', min: '1', max: '64', placeholder: 'default' })
  const memory = h('input', { type: 'number', name: 'memory_mb', min: '64', step: '64', placeholder: 'default' })
  const timeout = h('input', { type: 'number', name: 'timeout_secs', min: '0', placeholder: 'none' })
  const sname = h('input', { type: 'text', name: 'name', placeholder: 'optional' })
  const network = h('input', { type: 'checkbox', name: 'network' })
  const runtime = h('select', { name: 'runtime' }, h('option', { value: '' }, 'default'))
  const status = h('span', { class: 'muted', id: 'create-status' })
  api('GET', '/v1/catalog', undefined, { signal }).then((c) => {
    replace(image, c.images.map((i) => h('option', { value: i.name }, i.name)))
    for (const r of (c.runtimes ?? []).filter((r) => r.available)) runtime.append(h('option', { value: r.name }, r.default ? `${r.name} (default)` : r.name))
  }).catch(() => {})
  api('GET', '/v1/templates', undefined, { signal }).then((t) => {
    for (const x of t.templates) template.append(h('option', { value: x.name }, x.name))
  }).catch(() => {})
  const create = button('Create', async () => {
    const req = { image: image.value, network: network.checked }
    if (template.value) { req.template = template.value; delete req.image }
    if (cpus.value) req.cpus = Number(cpus.value)
    if (memory.value) req.memory_mb = Number(memory.value)
    if (timeout.value) req.timeout_secs = Number(timeout.value)
    if (sname.value.trim()) req.name = sname.value.trim()
    if (runtime.value) req.runtime = runtime.value
    status.textContent = 'creating… (the first sandbox of an image may build it)'
    try {
      const s = await api('POST', '/v1/sandboxes', req)
      status.textContent = ''
      location.hash = `#/sandbox/${s.sandbox_id}`
    } catch (err) {
      status.textContent = ''
      throw err
    }
  }, { class: 'primary', id: 'create' })
  return h('div', { class: 'panel' }, h('h2', null, 'New sandbox'),
    h('div', { class: 'row' }, field('Image', image), field('Template', template), field('CPUs', cpus), field('Memory (MiB)', memory),
      field('Timeout (s)', timeout), field('Name', sname), field('Runtime', runtime), field('Network', network), create, status))
}
