// xterm.js writes its generated CSS (cell sizes, theme colours) into
// <style> elements, which the console's Content-Security-Policy refuses
// (style-src 'self', no inline styles). This module, imported before
// xterm, hands it an inert <xterm-style> element instead, whose text goes
// into a constructed stylesheet adopted by the document: CSSOM, which the
// policy allows, and nothing a sandbox writes ever reaches it.
const create = Document.prototype.createElement

Document.prototype.createElement = function (tag, options) {
  if (String(tag).toLowerCase() !== 'style') return create.call(this, tag, options)
  const doc = this
  const el = create.call(doc, 'xterm-style')
  const sheet = new CSSStyleSheet()
  let text = ''
  doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet]
  Object.defineProperty(el, 'textContent', {
    get: () => text,
    set: (v) => { text = String(v ?? ''); sheet.replaceSync(text) }
  })
  el.remove = function () {
    doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet)
    Element.prototype.remove.call(this)
  }
  return el
}
