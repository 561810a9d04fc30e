// A terminal on the PTY WebSocket (GET /v1/sandboxes/{id}/pty): binary
// frames both ways, JSON resize frames from here, one exit frame at the
// end. The token travels as a subprotocol, never in the URL.
import './xterm-csp.js'
import { Terminal } from '../vendor/xterm/xterm.mjs'
import { FitAddon } from '../vendor/xterm/addon-fit.mjs'
import { token, bearerProtocol } from './api.js'
import { h } from './dom.js'

// openTerminal fills box with a terminal of sandbox id, closed when signal
// aborts; status shows the connection's state.
export function openTerminal (box, id, signal, status) {
  const term = new Terminal({ fontSize: 13, cursorBlink: true, scrollback: 5000 })
  const fit = new FitAddon()
  term.loadAddon(fit)
  const host = h('div', { class: 'terminal', id: 'terminal' })
  box.replaceChildren(host)
  term.open(host)
  fit.fit()
  const protocols = ['hutch.terminal']
  if (token.get()) protocols.push(bearerProtocol(token.get()))
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
  const url = `${scheme}://${location.host}/v1/sandboxes/${encodeURIComponent(id)}/pty?cols=${term.cols}&rows=${term.rows}`
  const ws = new WebSocket(url, protocols)
  ws.binaryType = 'arraybuffer'
  const enc = new TextEncoder()
  status.textContent = 'connecting…'
  ws.onopen = () => { status.textContent = 'connected'; term.focus() }
  ws.onmessage = (e) => {
    if (typeof e.data !== 'string') return term.write(new Uint8Array(e.data))
    let c
    try { c = JSON.parse(e.data) } catch { return }
    if (c.type === 'exit') status.textContent = `exited (${c.signal || c.exit_code})`
  }
  ws.onclose = (e) => { if (!status.textContent.startsWith('exited')) status.textContent = `closed${e.reason ? `: ${e.reason}` : ''}` }
  term.onData((d) => { if (ws.readyState === WebSocket.OPEN) ws.send(enc.encode(d)) })
  term.onResize(({ cols, rows }) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'resize', cols, rows }))
  })
  const ro = new ResizeObserver(() => { if (host.offsetParent) fit.fit() })
  ro.observe(host)
  signal.addEventListener('abort', () => { ro.disconnect(); ws.close(); term.dispose() }, { once: true })
  return { fit: () => fit.fit(), term }
}
