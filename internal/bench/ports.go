package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// previewServer serves a small file and, at /big, size bytes, on port
// 8000 of the sandbox's loopback; a raw TCP server on 9000 sends size
// bytes to each client.
func previewServer(size int64) string {
	return fmt.Sprintf(`import http.server, socket, threading
N = %d
CHUNK = b'0123456789abcdef' * 65536
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path == '/big':
            self.send_response(200); self.send_header('Content-Length', str(N)); self.end_headers()
            n = N
            while n > 0:
                self.wfile.write(CHUNK[:n]); n -= len(CHUNK)
            return
        body = b'hello'
        self.send_response(200); self.send_header('Content-Length', '5'); self.end_headers(); self.wfile.write(body)
def raw():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', 9000)); s.listen()
    while True:
        c, _ = s.accept()
        n = N
        while n > 0:
            c.sendall(CHUNK[:n]); n -= len(CHUNK)
        c.close()
threading.Thread(target=raw, daemon=True).start()
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), H).serve_forever()`, size)
}

// insideScript times runs GETs of the small file made inside the sandbox
// to the server directly over one kept-alive connection (as the preview
// path keeps its own), after warmup untimed ones, one duration in seconds
// per line.
const insideScript = `import http.client, sys, time
runs, warmup = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection('127.0.0.1', 8000)
for i in range(warmup + runs):
    t0 = time.perf_counter()
    c.request('GET', '/small'); r = c.getresponse(); r.read()
    t = time.perf_counter() - t0
    if i >= warmup:
        print('%.9f' % t)
`

// withPreview runs fn with a sandbox serving previewServer, its port 8000
// exposed at url.
func (e *env) withPreview(ctx context.Context, fn func(id, url string) error) error {
	return e.withSandbox(ctx, func(id string) error {
		if _, err := e.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"python3", "-c", previewServer(e.opts.StreamBytes)}}); err != nil {
			return err
		}
		info, err := e.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000})
		if err != nil {
			return err
		}
		url := e.c.URL() + info.URL
		// The server may still be starting.
		for i := 0; ; i++ {
			if _, err := e.previewGet(ctx, url+"small"); err == nil {
				break
			} else if i == 100 {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
		return fn(id, url)
	})
}

// previewGet fetches url, reading its whole body; its size.
func (e *env) previewGet(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	if e.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+e.opts.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return n, err
}

// previewRequest times a small GET through the preview URL and, in the
// same sandbox, the same GET made inside the sandbox to the server
// directly: what the preview path adds.
func previewRequest(ctx context.Context, e *env) (Result, error) {
	var via, inside []time.Duration
	err := e.withPreview(ctx, func(id, url string) error {
		var err error
		via, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			_, err := e.previewGet(ctx, url+"small")
			return time.Since(start), err
		})
		if err != nil {
			return err
		}
		res, err := e.exec(ctx, id, "python3", "-c", insideScript, fmt.Sprint(e.opts.Runs), fmt.Sprint(e.opts.Warmup))
		if err != nil {
			return err
		}
		inside, err = parseSeconds(res.Stdout, e.opts.Runs)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	res, base := latencyResult(via), latencyResult(inside)
	base.Name, base.Title = "inside", "the same GET made inside the sandbox"
	res.Baselines = []Result{base}
	res.Note = fmt.Sprintf("the preview path adds %.2f ms at p50 (%.2f vs %.2f ms)", ms(res.Latency.P50-base.Latency.P50), ms(res.Latency.P50), ms(base.Latency.P50))
	return res, nil
}

// previewThroughput times a large answer through the preview URL and the
// same bytes through port-forward (Client.Forward).
func previewThroughput(ctx context.Context, e *env) (Result, error) {
	size := e.opts.StreamBytes
	var via, forwarded []time.Duration
	err := e.withPreview(ctx, func(id, url string) error {
		if _, err := e.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 9000}); err != nil {
			return err
		}
		var err error
		if via, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			n, err := e.previewGet(ctx, url+"big")
			if err == nil && n != size {
				err = fmt.Errorf("read %d bytes through the preview, want %d", n, size)
			}
			return time.Since(start), err
		}); err != nil {
			return err
		}
		forwarded, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			conn, err := e.c.Forward(ctx, id, 9000)
			if err != nil {
				return 0, err
			}
			defer conn.Close()
			n, err := io.Copy(io.Discard, conn)
			if err == nil && n != size {
				err = fmt.Errorf("read %d bytes through port-forward, want %d", n, size)
			}
			return time.Since(start), err
		})
		return err
	})
	if err != nil {
		return Result{}, err
	}
	res, fwd := latencyResult(via), latencyResult(forwarded)
	fwd.Name, fwd.Title = "port-forward", "the same bytes through port-forward"
	res.Baselines = []Result{fwd}
	mibs := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	res.Note = fmt.Sprintf("%s: %.0f MiB/s through the preview URL, %.0f MiB/s through port-forward, at p50",
		sizeText(size), mibs(res.Latency.P50), mibs(fwd.Latency.P50))
	return res, nil
}
