// The REST API client. The token the user entered lives in this tab's
// sessionStorage and goes out as "Authorization: Bearer"; requests carry no
// cookies (credentials: 'omit'). Streams are read with fetch and a
// ReadableStream (an EventSource cannot send the header).

const tokenKey = 'hutch.token'

export const token = {
  get: () => sessionStorage.getItem(tokenKey) ?? '',
  set: (t) => sessionStorage.setItem(tokenKey, t),
  clear: () => sessionStorage.removeItem(tokenKey)
}

// ApiError is an error answer: status and the error envelope.
export class ApiError extends Error {
  constructor (status, env) {
    super(env?.message ? `${env.code ?? status}: ${env.message}` : `HTTP ${status}`)
    this.status = status
    this.envelope = env
  }
}

// request calls the API and returns the Response; an error status throws
// an ApiError. A body that is a Blob, File or string is sent as is, any
// other value as JSON.
export async function request (method, path, body, { headers, signal } = {}) {
  const hs = new Headers(headers)
  const t = token.get()
  if (t) hs.set('Authorization', `Bearer ${t}`)
  let payload = body
  if (body !== undefined && !(body instanceof Blob) && typeof body !== 'string') {
    hs.set('Content-Type', 'application/json')
    payload = JSON.stringify(body)
  }
  const res = await fetch(path, { method, headers: hs, body: payload, signal, credentials: 'omit', cache: 'no-store' })
  if (!res.ok) {
    let env
    try { env = (await res.json()).error } catch {}
    const err = new ApiError(res.status, env)
    if (res.status === 401 || (res.status === 403 && env?.code === 'forbidden')) {
      window.dispatchEvent(new CustomEvent('hutch:unauthorized', { detail: err }))
    }
    throw err
  }
  return res
}

// api calls the API and returns the decoded JSON answer.
export async function api (method, path, body, opts) {
  return (await request(method, path, body, opts)).json()
}

// q builds a query string from the defined values of params.
export function q (params) {
  const s = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') s.set(k, String(v))
  }
  const str = s.toString()
  return str ? `?${str}` : ''
}

// sse reads a Server-Sent Events answer of path and calls onEvent with
// {type, id, data} for each event (data parsed as JSON when it is JSON),
// until the stream ends or signal aborts.
export async function sse (path, onEvent, signal) {
  const res = await request('GET', path, undefined, { headers: { Accept: 'text/event-stream' }, signal })
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let buf = ''
  let ev = {}
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buf += value
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      if (line.endsWith('\r')) line = line.slice(0, -1)
      if (line === '') {
        if (ev.data !== undefined) onEvent({ type: ev.event ?? 'message', id: ev.id, data: parse(ev.data) })
        ev = {}
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const name = colon < 0 ? line : line.slice(0, colon)
      let v = colon < 0 ? '' : line.slice(colon + 1)
      if (v.startsWith(' ')) v = v.slice(1)
      ev[name] = name === 'data' && ev.data !== undefined ? `${ev.data}\n${v}` : v
    }
  }
}

function parse (s) {
  try { return JSON.parse(s) } catch { return s }
}

// follow keeps an event stream of /v1/events/stream (or a sandbox's) open
// until signal aborts: it reconnects after a failure, resuming after the
// last event seen, and calls onEvent with each event record.
export async function follow (params, onEvent, signal) {
  let after = params.after ?? 'now'
  while (!signal.aborted) {
    try {
      await sse(`/v1/events/stream${q({ ...params, after })}`, (e) => {
        if (e.type === 'open' || e.type === 'result' || e.type === 'error') return
        if (e.id) after = e.id
        onEvent(e.data)
      }, signal)
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof ApiError && err.status < 500) throw err
    }
    await sleep(2000, signal)
  }
}

// sleep resolves after ms, or at once when signal aborts.
export function sleep (ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve() }, { once: true })
  })
}

// bearerProtocol is the WebSocket subprotocol that carries the token
// (internal/auth BearerProtocol): a browser cannot set headers on a
// WebSocket, and a token in the URL would end up in logs.
export function bearerProtocol (t) {
  const b = new TextEncoder().encode(t)
  let bin = ''
  for (const c of b) bin += String.fromCharCode(c)
  return 'hutch.bearer.' + btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

// every calls fn now and then every ms until signal aborts.
export async function every (ms, signal, fn) {
  while (!signal.aborted) {
    try { await fn() } catch {}
    await sleep(ms, signal)
  }
}
