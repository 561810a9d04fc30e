// The lifecycle actions of a sandbox, shared by the list and the sandbox
// page: each is one API call.
import { api } from './api.js'
import { button, flash } from './dom.js'

const enc = encodeURIComponent

// passing are the states a sandbox only passes through: a page that shows
// one looks again soon.
export const passing = new Set(['booting', 'pausing', 'resuming', 'checkpointing', 'stopping'])

let chain = Promise.resolve()

// exclusive runs fn after every fn given before it has finished. The list
// polls metrics under it, so that no poll is in flight while an action
// stops the sandbox it asks about.
export function exclusive (fn) {
  const run = chain.then(fn, fn)
  chain = run.catch(() => {})
  return run
}

// actionButtons returns the buttons that fit s's state; done runs after
// an action succeeded, with its answer (a fork's has sandbox_ids, a
// snapshot's snapshot_id). An action that cannot be undone (stop) asks
// first, as removing an image does.
export function actionButtons (s, done = () => {}) {
  const id = enc(s.sandbox_id)
  const act = (label, fn, props, ask) => button(label, () => {
    if (ask && !confirm(ask)) return
    return exclusive(async () => {
      const res = await fn()
      const made = res?.sandbox_ids?.join(', ') ?? res?.snapshot_id
      flash(`${label}: ${s.sandbox_id}${made ? ` → ${made}` : ''}`)
      await done(res)
    })
  }, { 'data-action': label.toLowerCase(), ...props })
  if (s.stopped) return []
  const out = []
  if (s.state === 'paused') out.push(act('Resume', () => api('POST', `/v1/sandboxes/${id}/resume`, {})))
  else out.push(act('Pause', () => api('POST', `/v1/sandboxes/${id}/pause`, {})))
  out.push(act('Fork', () => api('POST', `/v1/sandboxes/${id}/fork`, {})))
  out.push(act('Snapshot', () => api('POST', `/v1/sandboxes/${id}/snapshots`, {})))
  out.push(act('Stop', () => api('DELETE', `/v1/sandboxes/${id}`), { class: 'danger' },
    `Stop sandbox ${s.sandbox_id}? Everything running in it ends; a stopped sandbox cannot be started again.`))
  return out
}
