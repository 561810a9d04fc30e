package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// slowClientConfig gives the daemon short client timeouts, so that the
// cuts these tests wait for come quickly.
const slowClientConfig = "http_read_timeout_secs: 2\nhttp_write_timeout_secs: 2\nhttp_idle_timeout_secs: 2\n"

// cutLimit is how long a test waits for a cut the daemon's 2 s timeouts
// imply; only a daemon that never cuts reaches it.
const cutLimit = time.Minute

// statusKiB reads a "Name: N kB" field of the daemon's /proc status.
func (d *daemon) statusKiB(name string) int64 {
	d.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	return vmKiB(d.t, string(b), name)
}

// resetPeakRSS makes the daemon's VmHWM start again from its current RSS.
func (d *daemon) resetPeakRSS() {
	d.t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.cmd.Process.Pid), []byte("5"), 0); err != nil {
		d.t.Fatal(err)
	}
}

// dialAPI opens a raw connection to d's REST API; it is closed when the
// test ends.
func (d *daemon) dialAPI() net.Conn {
	d.t.Helper()
	u, _ := url.Parse(d.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { conn.Close() })
	return conn
}

// trickle sends the head of a request that declares a 16 MiB body, then
// one byte of it every half second until the connection breaks. It
// returns once the server has closed the connection (true), or cutLimit
// passed (false).
func (d *daemon) trickle(method, path string) <-chan bool {
	conn := d.dialAPI()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", method, path, 16<<20)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	cut := make(chan bool, 1)
	go func() {
		defer close(stop)
		cut <- closedBy(conn, cutLimit)
	}()
	return cut
}

// closedBy reads conn until the server closes it (true) or limit passes.
func closedBy(conn net.Conn, limit time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, conn)
	ne, ok := err.(net.Error)
	return !ok || !ne.Timeout()
}

// TestSlowClients checks that clients cannot hold the daemon: bodies that
// trickle in or never arrive are cut at the read timeout without the
// daemon allocating their declared sizes, an idle kept-alive connection is
// closed, a stalled streamed upload is cut, and an exec that runs longer
// than every timeout still gets its answer.
func TestSlowClients(t *testing.T) {
	d := startDaemon(t, baseConfig(slowClientConfig))

	t.Run("declared bodies", func(t *testing.T) {
		// Each request declares 16 MiB; 30 of them used to take the
		// daemon's RSS up by their declared sizes, and stay open.
		const n = 30
		d.resetPeakRSS()
		before := d.statusKiB("VmHWM")
		cuts := make([]<-chan bool, n)
		for i := range cuts {
			cuts[i] = d.trickle("POST", "/v1/sandboxes")
		}
		for i, cut := range cuts {
			if !<-cut {
				t.Errorf("request %d declaring 16 MiB was still open after %s", i, cutLimit)
			}
		}
		growth := d.statusKiB("VmHWM") - before
		t.Logf("peak RSS grew by %d KiB for %d requests declaring 16 MiB each", growth, n)
		if growth > 64<<10 {
			t.Fatalf("peak RSS grew by %d KiB, more than 64 MiB, for requests that sent a few bytes", growth)
		}
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		conn := d.dialAPI()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("healthz on a kept-alive connection: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		if !closedBy(conn, cutLimit) {
			t.Fatalf("an idle kept-alive connection was still open after %s", cutLimit)
		}
	})

	id := d.create(api.CreateRequest{Image: "python"})

	t.Run("stalled upload", func(t *testing.T) {
		if !<-d.trickle("PUT", "/v1/sandboxes/"+id+"/files?path=/tmp/trickled") {
			t.Fatalf("a trickling upload was still open after %s", cutLimit)
		}
		// A fresh client: the idle timeout may be closing d.c's kept-alive
		// connection just as the stat would reuse it.
		_, err := client.New(d.url, "").FsStat(context.Background(), api.FsStatRequest{SandboxID: id, Path: "/tmp/trickled"})
		wantCode(t, err, "S211")
	})

	t.Run("long exec", func(t *testing.T) {
		// 5 s: longer than both the read and the write timeout.
		res, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"sleep", "5"}, TimeoutMs: 60_000})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("exec of sleep 5 under 2 s timeouts: %+v, %v", res, err)
		}
	})
}
