// Package console is hutch's web console: a single-page app of plain
// JavaScript modules, embedded in the binary and served by the daemon at
// /ui/ on its HTTP listener. It is only a client of the REST API: it sends
// the token the user enters (kept in the tab's sessionStorage) as a bearer
// header, so it can do nothing the token's owner could not do with curl.
//
// Every answer carries a strict Content-Security-Policy (scripts, styles,
// connections and images from the daemon's own origin only; no inline
// script or style; no framing), X-Content-Type-Options: nosniff and no
// Referer. The files under web/vendor are xterm.js and its fit addon, copied
// from the npm packages pinned in package.json by `npm run vendor`.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// Prefix is the path the console is served under.
const Prefix = "/ui/"

//go:embed web
var files embed.FS

// policy is the Content-Security-Policy of every answer. connect-src
// 'self' covers the API's fetches and the terminal's WebSocket (ws: to the
// same host, which CSP Level 3 counts as 'self').
const policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files under Prefix; GET of the bare
// "/ui" is redirected there.
func Handler() http.Handler {
	web, err := fs.Sub(files, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	static := http.StripPrefix(Prefix, http.FileServerFS(web))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/ui" {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		static.ServeHTTP(w, r)
	})
}
