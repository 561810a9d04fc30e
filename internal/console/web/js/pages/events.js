// The events page: the recent events and a live tail, filtered by type
// (a pattern such as "sandbox.*") and sandbox.
import { api, q, follow } from '../api.js'
import { h, replace, field, flash } from '../dom.js'

export const name = 'events'

export async function render (root, _params, signal) {
  const type = h('input', { type: 'text', name: 'type', placeholder: 'type, e.g. sandbox.*' })
  const sandbox = h('input', { type: 'text', name: 'sandbox_id', placeholder: 'sandbox id' })
  const body = h('tbody')
  const count = h('span', { class: 'muted' })
  const apply = h('button', { type: 'button', class: 'primary' }, 'Apply')
  replace(root, h('h1', null, 'Events'),
    h('div', { class: 'row panel' }, field('Type', type), field('Sandbox', sandbox), apply, count),
    h('table', { id: 'events' }, h('thead', null, h('tr', null, ['Time', 'Type', 'Sandbox', 'Data'].map((t) => h('th', null, t)))), body))

  let tail = null
  const add = (e) => {
    body.prepend(h('tr', { 'data-type': e.type }, h('td', { class: 'mono' }, e.time), h('td', null, e.type),
      h('td', { class: 'mono' }, e.sandbox_id ? h('a', { href: `#/sandbox/${e.sandbox_id}` }, e.sandbox_id) : ''),
      h('td', { class: 'mono' }, e.data == null ? '' : JSON.stringify(e.data))))
    while (body.children.length > 500) body.lastChild.remove()
    count.textContent = `${body.children.length} shown`
  }
  async function start () {
    tail?.abort()
    tail = new AbortController()
    const s = AbortSignal.any([signal, tail.signal])
    const params = { type: type.value.trim(), sandbox_id: sandbox.value.trim() }
    replace(body)
    const since = new Date(Date.now() - 3600_000).toISOString()
    const past = await api('GET', `/v1/events${q({ ...params, since, limit: 1000 })}`, undefined, { signal: s })
    for (const e of past.events.slice(-200)) add(e)
    follow({ ...params, after: past.events.at(-1)?.id ?? 'now' }, add, s).catch((err) => flash(err.message, true))
  }
  apply.addEventListener('click', () => start().catch((err) => flash(err.message, true)))
  for (const el of [type, sandbox]) el.addEventListener('keydown', (e) => { if (e.key === 'Enter') apply.click() })
  await start()
}
