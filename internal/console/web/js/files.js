// The file browser of a sandbox: list a directory (fs/ls), go into
// directories, download, upload, and edit small text files.
import { api, request, q } from './api.js'
import { h, replace, bytes, button, flash } from './dom.js'

const editLimit = 256 << 10

// fileBrowser returns the browser's element for sandbox id.
export function fileBrowser (id, start = '/tmp') {
  const base = `/v1/sandboxes/${encodeURIComponent(id)}`
  const pathIn = h('input', { type: 'text', name: 'path', value: start, class: 'mono' })
  const upload = h('input', { type: 'file', name: 'upload', multiple: true })
  const body = h('tbody')
  const editor = h('div')
  const join = (dir, name) => (dir.endsWith('/') ? dir : dir + '/') + name

  async function list (dir = pathIn.value) {
    const res = await api('POST', `${base}/fs/ls`, { path: dir })
    pathIn.value = dir
    const entries = res.entries.sort((a, b) => (b.is_dir - a.is_dir) || a.name.localeCompare(b.name))
    const up = dir.replace(/\/[^/]+\/?$/, '') || '/'
    replace(body,
      dir !== '/' ? h('tr', null, h('td', null, h('a', { href: '#', onclick: (e) => { e.preventDefault(); list(up) } }, '..')), h('td'), h('td'), h('td')) : null,
      entries.map((e) => h('tr', { 'data-file': e.name },
        h('td', { class: 'mono' }, e.is_dir
          ? h('a', { href: '#', onclick: (ev) => { ev.preventDefault(); list(join(dir, e.name)).catch((err) => flash(err.message, true)) } }, `${e.name}/`)
          : e.name),
        h('td', { class: 'num' }, e.is_dir ? '' : bytes(e.size)),
        h('td', { class: 'mono muted' }, e.mode),
        h('td', null, e.is_dir ? null : h('div', { class: 'actions' },
          button('Download', () => download(join(dir, e.name), e.name)),
          e.size <= editLimit ? button('Edit', () => edit(join(dir, e.name)), { 'data-action': 'edit' }) : null)))))
  }

  async function download (path, name) {
    const res = await request('GET', `${base}/files${q({ path })}`)
    const url = URL.createObjectURL(await res.blob())
    const a = h('a', { download: name })
    a.href = url // a blob: URL of our own making
    document.body.append(a)
    a.click()
    a.remove()
    setTimeout(() => URL.revokeObjectURL(url), 10_000)
  }

  async function edit (path) {
    const res = await request('GET', `${base}/files${q({ path })}`)
    const buf = await res.arrayBuffer()
    let text
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(buf) } catch { return flash(`${path} is not UTF-8 text`, true) }
    const area = h('textarea', { name: 'editor', spellcheck: 'false' })
    area.value = text
    replace(editor, h('div', { class: 'panel' },
      h('div', { class: 'crumbs' }, h('strong', { class: 'mono' }, path), h('span', { class: 'spacer' }),
        button('Save', async () => {
          await request('PUT', `${base}/files${q({ path })}`, new Blob([area.value]))
          flash(`saved ${path}`)
          await list()
        }, { class: 'primary', id: 'save' }),
        button('Close', () => replace(editor))),
      area))
  }

  upload.addEventListener('change', async () => {
    const dir = pathIn.value
    try {
      for (const f of upload.files) {
        await request('PUT', `${base}/files${q({ path: join(dir, f.name) })}`, f)
        flash(`uploaded ${f.name}`)
      }
      upload.value = ''
      await list(dir)
    } catch (err) { flash(err.message, true) }
  })
  pathIn.addEventListener('keydown', (e) => { if (e.key === 'Enter') list().catch((err) => flash(err.message, true)) })

  const el = h('div', null,
    h('div', { class: 'row panel' }, h('label', null, 'Directory', pathIn), button('Open', () => list()),
      h('label', null, 'Upload to this directory', upload)),
    h('table', { id: 'files' }, h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', { class: 'num' }, 'Size'), h('th', null, 'Mode'), h('th'))), body),
    editor)
  return { el, list }
}
