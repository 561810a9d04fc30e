// Images and templates: the catalog's images with their cache state (a
// pull or build shows its progress line), templates (a built one with its
// layers and last build, its log's end behind a toggle) and snapshots.
import { api, every, sleep } from '../api.js'
import { h, replace, bytes, duration, stateBadge, button, flash } from '../dom.js'

export const name = 'images'

export async function render (root, _params, signal) {
  const imgBody = h('tbody')
  const tplBody = h('tbody')
  const snapBody = h('tbody')
  const th = (...t) => h('thead', null, h('tr', null, t.map((x) => h('th', null, x))))
  replace(root,
    h('h1', null, 'Images'),
    h('table', { id: 'images' }, th('Name', 'Kind', 'Source', 'State', 'Size', 'In use', 'Allowed', ''), imgBody),
    h('h2', null, 'Templates'),
    h('table', { id: 'templates' }, th('Name', 'Image', 'From sandbox', 'Layer', 'Layers', 'Last build', 'Created', ''), tplBody),
    h('h2', null, 'Snapshots'),
    h('table', { id: 'snapshots' }, th('Snapshot', 'Sandbox', 'Size', 'Created', ''), snapBody))

  const progress = new Map() // image name → status while a pull or build runs
  async function images () {
    const res = await api('GET', '/v1/images', undefined, { signal })
    replace(imgBody, res.images.map((i) => {
      const p = progress.get(i.name)
      const state = p?.state ?? i.state
      return h('tr', { 'data-image': i.name },
        h('td', null, i.name), h('td', null, i.kind), h('td', { class: 'mono' }, i.oci_ref),
        h('td', null, stateBadge(state), p?.detail ? h('div', { class: 'muted mono' }, `${duration(p.elapsed_secs)} ${p.detail}`) : null),
        h('td', { class: 'num' }, i.size_bytes ? bytes(i.size_bytes) : '–'), h('td', { class: 'num' }, String(i.in_use)),
        h('td', null, i.allowed ? 'yes' : 'no'),
        h('td', null, h('div', { class: 'actions' },
          state === 'ready' ? null : button(i.kind === 'preset' ? 'Build' : 'Pull', () => pull(i.name)),
          state === 'ready' ? button('Remove', async () => { if (!confirm(`Remove image ${i.name} from the cache?`)) return; await api('DELETE', `/v1/images/${encodeURIComponent(i.name)}`); await images() }, { class: 'danger' }) : null)))
    }))
  }

  // pull asks for the image and polls its status until the pull answers.
  async function pull (nm) {
    const path = `/v1/images/${encodeURIComponent(nm)}`
    let done = false
    const call = api('POST', path, {}).finally(() => { done = true })
    call.catch(() => {})
    while (!done && !signal.aborted) {
      progress.set(nm, await api('GET', path, undefined, { signal }).catch(() => progress.get(nm)))
      await images()
      await sleep(1000, signal)
    }
    progress.delete(nm)
    await call
    flash(`${nm} is ready`)
    await images()
  }

  // opened are the templates whose build log is shown, kept across refreshes.
  const opened = new Set()
  // build is a template's last build (issue 39): its state, steps, cache
  // hits and duration, and its log's last lines behind a toggle.
  function build (t) {
    const b = t.last_build
    if (!b) return h('td', { class: 'muted' }, '–')
    const log = h('details', { class: 'build-log', open: opened.has(t.name) || null },
      h('summary', null, 'Log'),
      h('pre', { class: 'output' }, b.log.join('\n')))
    log.addEventListener('toggle', () => { log.open ? opened.add(t.name) : opened.delete(t.name) })
    return h('td', { 'data-build': b.status },
      stateBadge(b.status === 'succeeded' ? 'ready' : 'failed'),
      h('div', { class: 'muted' }, `${b.steps} steps, ${b.cached_steps} cached, ${duration(b.duration_ms / 1000)}, ${b.finished_at}`),
      b.error ? h('div', { class: 'mono' }, b.error) : null,
      log)
  }

  async function templates () {
    const res = await api('GET', '/v1/templates', undefined, { signal })
    replace(tplBody, res.templates.map((t) => h('tr', { 'data-template': t.name },
      h('td', null, t.name), h('td', null, t.image ?? ''), h('td', { class: 'mono' }, t.from_sandbox ?? ''),
      h('td', { class: 'num' }, t.layer_bytes ? bytes(t.layer_bytes) : '–'),
      h('td', { class: 'num' }, t.last_build ? String(t.last_build.layers) : '–'), build(t), h('td', null, t.created_at),
      h('td', null, button('Delete', async () => { if (!confirm(`Delete template ${t.name}?`)) return; await api('DELETE', `/v1/templates/${encodeURIComponent(t.name)}`); await templates() }, { class: 'danger' })))))
  }

  async function snapshots () {
    const res = await api('GET', '/v1/snapshots', undefined, { signal })
    replace(snapBody, (res.snapshots ?? []).map((s) => h('tr', null,
      h('td', { class: 'mono' }, s.snapshot_id), h('td', { class: 'mono' }, s.sandbox_id ?? ''),
      h('td', { class: 'num' }, s.size_bytes ? bytes(s.size_bytes) : '–'), h('td', null, s.created_at ?? ''),
      h('td', null, button('Delete', async () => { if (!confirm(`Delete snapshot ${s.snapshot_id}?`)) return; await api('DELETE', `/v1/snapshots/${encodeURIComponent(s.snapshot_id)}`); await snapshots() }, { class: 'danger' })))))
  }

  await Promise.all([images(), templates(), snapshots()])
  every(5000, signal, () => Promise.all([images(), templates(), snapshots()]))
}
