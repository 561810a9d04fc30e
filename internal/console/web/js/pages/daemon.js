// The daemon: version (/healthz), the Prometheus metrics it exposes
// (/metrics: live sandboxes, warm pool, image cache, creates, stops,
// errors), its image catalog, and the caller's use against its quota
// (/v1/quota, issue 38).
import { api, request, every } from '../api.js'
import { h, replace, bytes } from '../dom.js'

export const name = 'daemon'

// parseMetrics reads Prometheus text: [{name, labels, value}], comments
// and histogram buckets left out.
export function parseMetrics (text) {
  const out = []
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const m = line.match(/^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/)
    if (!m || m[1].endsWith('_bucket')) continue
    out.push({ name: m[1], labels: m[3] ?? '', value: Number(m[4]) })
  }
  return out
}

const known = {
  hutch_sandboxes_live: ['Live sandboxes (every owner)', String],
  hutch_sandboxes_capacity: ['Sandbox capacity (max_concurrent_sandboxes)', String],
  hutch_warm_pool_target: ['Warm pool target', String],
  hutch_warm_pool_ready: ['Warm pool ready', String],
  hutch_warm_pool_hit_ratio: ['Warm pool hit rate', (v) => `${(v * 100).toFixed(1)}%`],
  hutch_image_cache_bytes: ['Image cache', bytes]
}

export async function render (root, _params, signal) {
  const summary = h('dl', { class: 'kv', id: 'daemon-summary' })
  const body = h('tbody')
  const catalog = h('tbody')
  const quota = h('tbody')
  replace(root, h('h1', null, 'Daemon'), h('div', { class: 'panel' }, summary),
    h('h2', null, 'Your quota'), h('table', { id: 'quota' }, h('thead', null, h('tr', null, h('th', null, 'Limit'), h('th', { class: 'num' }, 'Used'), h('th', { class: 'num' }, 'Of'), h('th', null, 'Config key'))), quota),
    h('h2', null, 'Catalog'), h('table', null, h('thead', null, h('tr', null, h('th', null, 'Image'), h('th', null, 'Kind'), h('th', null, 'Source'))), catalog),
    h('h2', null, 'Metrics'), h('table', { id: 'metrics' }, h('thead', null, h('tr', null, h('th', null, 'Metric'), h('th', null, 'Labels'), h('th', { class: 'num' }, 'Value'))), body))

  const cat = await api('GET', '/v1/catalog', undefined, { signal })
  replace(catalog, cat.images.map((i) => h('tr', null, h('td', null, i.name), h('td', null, i.kind), h('td', { class: 'mono' }, i.oci_ref))))

  every(5000, signal, async () => {
    const health = await api('GET', '/healthz', undefined, { signal })
    const q = await api('GET', '/v1/quota', undefined, { signal })
    replace(quota, q.items.map((it) => h('tr', { 'data-limit': it.name }, h('td', null, it.name), h('td', { class: 'num' }, String(it.used)),
      h('td', { class: 'num' }, it.limit ? String(it.limit) : 'no limit'), h('td', { class: 'mono' }, it.key))))
    let metrics = []
    let note = null
    try {
      metrics = parseMetrics(await (await request('GET', '/metrics', undefined, { signal })).text())
    } catch (err) { note = `metrics: ${err.message}` }
    const rows = [['Status', health.status], ['Version', health.version ?? '–']]
    for (const r of health.runtimes ?? []) {
      const how = [r.mode, r.default ? 'default' : ''].filter(Boolean).join(', ')
      rows.push([`Runtime ${r.name}`, r.available ? `${how ? `(${how}) ` : ''}${r.abilities}` : `unavailable: ${r.unavailable}`])
    }
    for (const [k, [label, fmt]] of Object.entries(known)) {
      const vals = metrics.filter((m) => m.name === k)
      if (vals.length) rows.push([label, vals.map((m) => fmt(m.value)).join(', ')])
    }
    const claims = metrics.filter((m) => m.name === 'hutch_warm_pool_claims_total')
    if (claims.length) rows.push(['Warm pool claims', claims.map((m) => `${m.labels || 'all'}: ${m.value}`).join(', ')])
    if (note) rows.push(['Note', note])
    replace(summary, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, String(v))]))
    replace(body, metrics.filter((m) => m.name.startsWith('hutch_')).map((m) => h('tr', null,
      h('td', { class: 'mono' }, m.name), h('td', { class: 'mono wrap' }, m.labels), h('td', { class: 'num' }, String(m.value)))))
  })
}
