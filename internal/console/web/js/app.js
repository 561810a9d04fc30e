// The console's entry point: sign-in, navigation and hash routing. Each
// page module exports render(root, params, signal); signal aborts when the
// user leaves the page, which closes its streams and timers.
import { api, token, ApiError } from './api.js'
import { h, replace, flash } from './dom.js'
import * as sandboxes from './pages/sandboxes.js'
import * as sandbox from './pages/sandbox.js'
import * as images from './pages/images.js'
import * as events from './pages/events.js'
import * as daemon from './pages/daemon.js'

const routes = [
  [/^#\/sandboxes$/, sandboxes],
  [/^#\/sandbox\/([A-Za-z0-9._-]+)$/, sandbox],
  [/^#\/images$/, images],
  [/^#\/events$/, events],
  [/^#\/daemon$/, daemon]
]

const main = document.getElementById('main')
let current = null

// signedIn reports whether the API will take this tab's requests: no
// token is needed on a daemon without api_tokens (/healthz says so), else
// the stored one is tried.
async function signedIn () {
  const health = await api('GET', '/healthz')
  if (!health.auth) return true
  if (!token.get()) return false
  try {
    await api('GET', '/v1/sandboxes?limit=1')
    return true
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return false
    throw err
  }
}

function showLogin (message) {
  current?.abort()
  current = null
  document.getElementById('nav').hidden = true
  document.getElementById('logout').hidden = true
  document.getElementById('who').textContent = ''
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', placeholder: 'API token', id: 'token' })
  const form = h('form', { class: 'panel login' },
    h('h1', null, 'Sign in to hutch'),
    h('p', { class: 'muted' }, 'Enter an API token of this daemon (its api_tokens). It is kept in this tab only and sent as a bearer header.'),
    message ? h('p', { class: 'muted' }, message) : null,
    h('p', null, input),
    h('button', { class: 'primary', type: 'submit' }, 'Sign in'))
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    token.set(input.value.trim())
    if (await signedIn()) {
      if (!location.hash || location.hash === '#/login') location.hash = '#/sandboxes'
      start()
    } else {
      token.clear()
      flash('That token is not valid for this daemon.', true)
    }
  })
  replace(main, form)
  input.focus()
}

function route () {
  current?.abort()
  current = new AbortController()
  const hash = location.hash || '#/sandboxes'
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', hash.startsWith(`#/${a.dataset.page}`) || (a.dataset.page === 'sandboxes' && hash.startsWith('#/sandbox/')))
  }
  for (const [re, page] of routes) {
    const m = hash.match(re)
    if (m) {
      const root = h('div', { 'data-page': page.name })
      replace(main, root)
      page.render(root, m.slice(1), current.signal).catch((err) => {
        if (!current.signal.aborted) flash(err.message, true)
      })
      return
    }
  }
  location.hash = '#/sandboxes'
}

async function start () {
  if (!(await signedIn())) return showLogin()
  document.getElementById('nav').hidden = false
  document.getElementById('logout').hidden = !token.get()
  document.getElementById('who').textContent = token.get() ? 'signed in with a token' : 'local daemon, no token needed'
  route()
}

window.addEventListener('hashchange', () => { if (current) route() })
window.addEventListener('hutch:unauthorized', () => showLogin('The daemon refused the token; sign in again.'))
document.getElementById('logout').addEventListener('click', () => { token.clear(); showLogin() })
start().catch((err) => replace(main, h('p', null, `The API did not answer: ${err.message}`)))
