// DOM helpers. Text reaches the page only as text nodes or attribute
// values set one by one: nothing here parses HTML, so whatever a sandbox
// wrote (output, file names, event data) stays text.

// h creates an element. props: "class", "on<event>" handlers, boolean
// attributes (true/false), DOM properties for non-string values, other
// attributes as strings. Children are nodes, strings (text nodes) or
// arrays of them; null and false are skipped.
export function h (tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v == null || v === false) continue
    if (k === 'class') el.className = v
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (k === 'href') el.setAttribute('href', safeHref(v))
    else if (typeof v === 'string' || typeof v === 'number' || v === true) el.setAttribute(k, v === true ? '' : String(v))
    else el[k] = v
  }
  append(el, children)
  return el
}

// append adds children (see h) to el.
export function append (el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c == null || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
  return el
}

// replace sets el's children.
export function replace (el, ...children) {
  el.replaceChildren()
  return append(el, children)
}

// safeHref keeps links to the console's own routes and to http(s) URLs;
// anything else (javascript:, data:) becomes a dead link.
export function safeHref (v) {
  const s = String(v)
  if (s.startsWith('#')) return s
  try {
    const u = new URL(s, location.href)
    if (u.protocol === 'http:' || u.protocol === 'https:') return u.href
  } catch {}
  return '#'
}

// bytes formats a byte count.
export function bytes (n) {
  if (n == null || Number.isNaN(n)) return '–'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++ }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`
}

// duration formats seconds as the largest two units.
export function duration (s) {
  if (s == null) return '–'
  s = Math.floor(s)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m`
  return `${Math.floor(s / 86400)}d ${Math.floor(s % 86400 / 3600)}h`
}

// stateBadge shows a state word.
export function stateBadge (state) {
  const s = String(state ?? 'unknown')
  return h('span', { class: `state state-${s.replace(/[^a-z]/g, '')}`, 'data-state': s }, s)
}

// flash shows a short message in the corner; errors stay longer.
export function flash (text, error = false) {
  const box = document.getElementById('flash')
  const m = h('div', { class: error ? 'msg error' : 'msg' }, text)
  box.append(m)
  setTimeout(() => m.remove(), error ? 8000 : 3000)
}

// button makes a button whose click runs fn, disabled while it runs, with
// a failure flashed.
export function button (label, fn, props = {}) {
  const b = h('button', { type: 'button', ...props }, label)
  b.addEventListener('click', async () => {
    b.disabled = true
    try { await fn() } catch (err) { flash(err.message, true) } finally { b.disabled = false }
  })
  return b
}

// field makes a labelled input.
export function field (label, input) {
  return h('label', { class: input.type === 'checkbox' ? 'check' : null }, input.type === 'checkbox' ? [input, label] : [label, input])
}

// decodeChunk turns an output chunk ({data, base64}) into text.
export function decodeChunk (c) {
  if (!c?.base64) return c?.data ?? ''
  const bin = atob(c.data)
  const b = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i)
  return new TextDecoder().decode(b)
}
