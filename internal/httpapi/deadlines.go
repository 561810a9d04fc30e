package httpapi

// Deadlines of a request's connection. The http.Server bounds reading a
// request and writing its answer from the moment the request arrives; the
// handler then moves the deadlines, so that
//
//   - computing an answer is bounded by the function's own limits (an exec
//     runs up to max_exec_timeout_ms) rather than by the write timeout, and
//     a read deadline that passes meanwhile does not cancel the request;
//   - writing the answer gets the write timeout from when it starts;
//   - the streamed routes get the read (upload) or write (download) timeout
//     for every streamChunk bytes, so a slow transfer that progresses goes
//     on for as long as it takes and a stalled or trickling one is cut.
//
// A ResponseWriter without deadlines (a test recorder) is served without.

import (
	"io"
	"net/http"
	"time"
)

// computing lifts the connection's deadlines while the handler computes
// the answer; the request's body must have been read, or be read through
// a progressReader.
func (s *server) computing(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// answering gives the writing of a whole answer the write timeout.
func (s *server) answering(w http.ResponseWriter) {
	if s.writeTimeout > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.writeTimeout))
	}
}

// progressReader is a streamed request body whose every streamChunk bytes
// must arrive within timeout of the previous ones.
type progressReader struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	// due is how many bytes are still to arrive before the deadline moves;
	// 0 before the first read.
	due int
}

func (s *server) progressBody(w http.ResponseWriter, body io.ReadCloser) io.ReadCloser {
	if s.readTimeout <= 0 {
		return body
	}
	return &progressReader{ReadCloser: body, rc: http.NewResponseController(w), timeout: s.readTimeout}
}

func (p *progressReader) Read(b []byte) (int, error) {
	if p.due <= 0 {
		_ = p.rc.SetReadDeadline(time.Now().Add(p.timeout))
		p.due = streamChunk
	}
	n, err := p.ReadCloser.Read(b)
	p.due -= n
	if err == io.EOF {
		// The whole body is in: waiting for the answer is not reading.
		_ = p.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// progressWriter is a streamed answer whose every write (at most
// streamChunk bytes) must complete within timeout.
type progressWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *server) progressAnswer(w http.ResponseWriter) io.Writer {
	if s.writeTimeout <= 0 {
		return w
	}
	return &progressWriter{w: w, rc: http.NewResponseController(w), timeout: s.writeTimeout}
}

func (p *progressWriter) Write(b []byte) (int, error) {
	_ = p.rc.SetWriteDeadline(time.Now().Add(p.timeout))
	return p.w.Write(b)
}
