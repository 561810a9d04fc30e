package envd

// Connection deadlines: whatever the server's own read and write timeouts,
// a request's body must progress (each read within ioTimeout) and each
// write of its answer complete within ioTimeout, so that a long stream
// that progresses goes on and a client that stalls is cut off.

import (
	"io"
	"net/http"
	"time"
)

// withDeadlines serves h with the deadlines above.
func withDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{}) // an idle stream is not a stalled read
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &deadlineReader{ReadCloser: r.Body, rc: rc}
		}
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc}, r)
	})
}

// deadlineReader gives each read of a body ioTimeout, and lifts the
// deadline once the body is read.
type deadlineReader struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (d *deadlineReader) Read(b []byte) (int, error) {
	_ = d.rc.SetReadDeadline(time.Now().Add(ioTimeout))
	n, err := d.ReadCloser.Read(b)
	if err != nil {
		_ = d.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter gives each write and flush of an answer ioTimeout.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(ioTimeout))
	return d.ResponseWriter.Write(b)
}

func (d *deadlineWriter) Flush() {
	_ = d.rc.SetWriteDeadline(time.Now().Add(ioTimeout))
	_ = d.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
