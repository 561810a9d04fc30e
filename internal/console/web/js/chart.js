// A hand-drawn SVG line chart of the last points of one series.
const NS = 'http://www.w3.org/2000/svg'

function svg (tag, attrs) {
  const el = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  return el
}

// Chart draws points ({t: ms, v}) of the last windowMs; format labels
// values.
export class Chart {
  constructor (title, format, windowMs = 5 * 60_000) {
    this.title = title
    this.format = format
    this.windowMs = windowMs
    this.points = []
    this.el = svg('svg', { class: 'chart', viewBox: '0 0 400 160', preserveAspectRatio: 'none', role: 'img' })
    this.el.setAttribute('aria-label', title)
    this.draw()
  }

  add (t, v) {
    this.points.push({ t, v })
    const from = t - this.windowMs
    while (this.points.length && this.points[0].t < from) this.points.shift()
    this.draw()
  }

  draw () {
    const W = 400; const H = 160; const top = 18; const bottom = 14
    const now = this.points.at(-1)?.t ?? 0
    const max = Math.max(1e-9, ...this.points.map((p) => p.v)) * 1.1
    const x = (t) => W - (now - t) / this.windowMs * W
    const y = (v) => H - bottom - v / max * (H - top - bottom)
    const kids = []
    for (let i = 0; i <= 4; i++) {
      const yy = top + i * (H - top - bottom) / 4
      kids.push(svg('line', { class: 'grid', x1: 0, x2: W, y1: yy, y2: yy }))
    }
    if (this.points.length > 1) {
      const pts = this.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`)
      kids.push(svg('polygon', { class: 'area', points: `${x(this.points[0].t).toFixed(1)},${H - bottom} ${pts.join(' ')} ${W},${H - bottom}` }))
      kids.push(svg('polyline', { class: 'line', points: pts.join(' ') }))
    }
    const label = (text, attrs) => { const t = svg('text', attrs); t.textContent = text; return t }
    const last = this.points.at(-1)
    kids.push(label(`${this.title}: ${last ? this.format(last.v) : '–'}`, { x: 4, y: 12 }))
    kids.push(label(`max ${this.format(max / 1.1)}`, { x: W - 4, y: 12, 'text-anchor': 'end' }))
    kids.push(label(`last ${Math.round(this.windowMs / 60000)} min`, { x: 4, y: H - 2 }))
    this.el.replaceChildren(...kids)
  }
}
