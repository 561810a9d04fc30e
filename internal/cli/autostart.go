package cli

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hutch-dev/hutch/client"
)

// Timings of the wait for an auto-started daemon.
const (
	healthPoll = 100 * time.Millisecond
	// exitGrace is how long to keep asking after the started daemon
	// exited: another CLI may have started one at the same moment, and
	// ours lost the race for the port.
	exitGrace = 5 * time.Second
)

// autoStartable reports whether the CLI may start a daemon that answers at
// daemonURL: an http URL whose host is loopback. A daemon anywhere else is
// somebody else's to run.
func autoStartable(daemonURL string) bool {
	u, err := url.Parse(daemonURL)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// listenAddr is the --listen address of a daemon that answers at daemonURL.
func listenAddr(daemonURL string) string {
	u, err := url.Parse(daemonURL)
	if err != nil || u.Hostname() == "" {
		return defaultListen
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// autoStart starts `hutch serve` in the background, says so, and waits until
// it answers.
// Where the package's unit runs the daemon, it starts none: it says how
// to start the unit.
func (a *app) autoStart(ctx context.Context, c *client.Client) error {
	if a.getenv("HUTCH_URL") == "" {
		if state := a.serviceState(); state != "" {
			return fmt.Errorf("no daemon at %s: the hutch service is %s; start it with `systemctl start hutch` (the CLI does not start a daemon beside the package's unit)", client.SocketPath(a.getenv), state)
		}
	}
	logPath, exited, err := a.startDaemon(a.dataDir(), listenAddr(c.URL()))
	if err != nil {
		return fmt.Errorf("no daemon at %s, and starting one failed: %w", c.URL(), err)
	}
	fmt.Fprintf(a.stderr, "hutch: no daemon at %s; started one in the background (log: %s)\n", c.URL(), logPath)
	return waitHealthy(ctx, c, exited, a.healthWait, logPath)
}

// waitHealthy polls c's /healthz until it answers, ctx ends, wait passes,
// or shortly after the started daemon exited.
func waitHealthy(ctx context.Context, c *client.Client, exited <-chan error, wait time.Duration, logPath string) error {
	deadline := time.Now().Add(wait)
	exitNote := ""
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Health(hctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			exited = nil
			exitNote = "exited"
			if err != nil {
				exitNote += " (" + err.Error() + ")"
			}
			if d := time.Now().Add(exitGrace); d.Before(deadline) {
				deadline = d
			}
		case <-time.After(healthPoll):
		}
	}
	if exitNote != "" {
		return fmt.Errorf("the daemon started in the background %s; see %s", exitNote, logPath)
	}
	return fmt.Errorf("the daemon started in the background did not answer within %s; see %s", wait, logPath)
}

// startDaemon starts `hutch serve` detached from this process: its own
// session, stdin /dev/null, output appended to DATA_DIR/hutch.log. exited
// yields the result of its Wait.
func startDaemon(dataDir, listen string) (logPath string, exited <-chan error, err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("finding the hutch binary: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", nil, err
	}
	logPath = filepath.Join(dataDir, "hutch.log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return "", nil, err
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.Command(self, "serve", "--data-dir", dataDir, "--listen", listen)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting %s serve: %w", self, err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return logPath, ch, nil
}
