package cli

// `hutch bench --private`: the benchmark starts a daemon of its own, on
// loopback ports the kernel picks and a throw-away data dir, configured
// for the benchmark (a warm pool of the image, room for the idle capacity
// scenario), and stops it afterwards. `make bench` uses it.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// privateStartTimeout bounds the wait for the private daemon to serve.
	privateStartTimeout = 60 * time.Second
	// privateStopTimeout bounds its shutdown, which stops its sandboxes.
	privateStopTimeout = 60 * time.Second
	// privateWarmPool is the warm pool size of the benchmark image.
	privateWarmPool = 2
)

// privateDaemon is a `hutch serve` child process of the benchmark.
type privateDaemon struct {
	cmd     *exec.Cmd
	dir     string
	logPath string
	// args are hutch's arguments; env is added to its environment.
	args []string
	env  []string
	// url and engineURL are where it serves.
	url, engineURL string
	exited         chan error
	// beforeRemove, when set, runs once the daemon exited, before its
	// directory is removed (the soak's leak scan).
	beforeRemove func()
}

// dataDir is the daemon's data dir.
func (d *privateDaemon) dataDir() string { return filepath.Join(d.dir, "data") }

// privateConfig is the private daemon's config: the given image cache, a
// warm pool of the image of a pinned size (so that creates of another
// shape always boot), and room for maxIdle idle sandboxes plus the pool and
// the stops under way.
func privateConfig(imageCache, image string, maxIdle int) string {
	return fmt.Sprintf("image_cache_dir: %q\nmax_concurrent_sandboxes: %d\nmax_concurrent_exec_per_sandbox: 8\nwarm_pool_auto: false\nwarm_pool: {%q: %d}\n",
		imageCache, maxIdle+privateWarmPool+8, image, privateWarmPool)
}

// privatePoolConfig is the config of the private daemon of the warm pool
// scenarios: the default warm pool settings, the given image cache, and
// the same room as privateConfig's.
func privatePoolConfig(imageCache string, maxIdle int) string {
	return fmt.Sprintf("image_cache_dir: %q\nmax_concurrent_sandboxes: %d\n", imageCache, maxIdle+privateWarmPool+8)
}

// startPrivateDaemon starts `hutch serve` (this very binary) with config
// cfg and more flags extra, and waits until it serves.
func startPrivateDaemon(ctx context.Context, cfg string, log io.Writer, extra ...string) (*privateDaemon, error) {
	return startPrivateDaemonEnv(ctx, cfg, nil, log, extra...)
}

// startPrivateDaemonEnv is startPrivateDaemon with env added to the
// daemon's environment (issue 37).
func startPrivateDaemonEnv(ctx context.Context, cfg string, env []string, log io.Writer, extra ...string) (*privateDaemon, error) {
	dir, err := os.MkdirTemp("", "hutch-bench-")
	if err != nil {
		return nil, err
	}
	d := &privateDaemon{dir: dir, logPath: filepath.Join(dir, "daemon.log"), env: env}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.args = append([]string{"serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--engine-listen", "127.0.0.1:0",
		"--data-dir", d.dataDir()}, extra...)
	if err := d.launch(ctx, log); err != nil {
		return nil, err
	}
	return d, nil
}

// launch starts the daemon's process, the first time or again after a
// kill, and waits until it serves; on an error its directory is gone.
func (d *privateDaemon) launch(ctx context.Context, log io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		os.RemoveAll(d.dir)
		return fmt.Errorf("finding the hutch binary: %w", err)
	}
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		os.RemoveAll(d.dir)
		return err
	}
	d.cmd, d.exited = exec.Command(self, d.args...), make(chan error, 1)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		os.RemoveAll(d.dir)
		return err
	}
	if d.env != nil {
		d.cmd.Env = append(os.Environ(), d.env...)
	}
	// Keep terminal signals for the bench, which stops the daemon itself.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(d.dir)
		return fmt.Errorf("starting hutch serve: %w", err)
	}
	serving := make(chan [2]string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			fmt.Fprintf(logFile, "%s\n", line)
			var rec struct {
				Msg          string `json:"msg"`
				Listen       string `json:"listen"`
				EngineListen string `json:"engine_listen"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "hutch serving" {
				serving <- [2]string{rec.Listen, rec.EngineListen}
			}
		}
	}()
	go func() {
		<-logged // Wait closes stderr: read it all first
		d.exited <- d.cmd.Wait()
	}()
	fmt.Fprintf(log, "bench: started a private daemon (log %s)\n", d.logPath)
	select {
	case addrs := <-serving:
		d.url, d.engineURL = "http://"+addrs[0], "ws://"+addrs[1]
		return nil
	case err := <-d.exited:
		err = fmt.Errorf("the private daemon exited: %v\n%s", err, tail(d.logPath, 20))
		os.RemoveAll(d.dir)
		return err
	case <-time.After(privateStartTimeout):
		err = fmt.Errorf("the private daemon did not serve within %s\n%s", privateStartTimeout, tail(d.logPath, 20))
	case <-ctx.Done():
		err = ctx.Err()
	}
	return errors.Join(err, d.stop())
}

// kill kills the daemon as kill -9 does, leaving its directory for a
// launch again.
func (d *privateDaemon) kill() error {
	if err := d.cmd.Process.Kill(); err != nil {
		return err
	}
	<-d.exited
	return nil
}

// stop shuts the daemon down (it stops its sandboxes) and removes its
// directory.
func (d *privateDaemon) stop() error {
	defer func() {
		if d.beforeRemove != nil {
			d.beforeRemove()
		}
		os.RemoveAll(d.dir)
	}()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return fmt.Errorf("stopping the private daemon: %w", err)
		}
		if err != nil {
			return fmt.Errorf("the private daemon ended with %v\n%s", err, tail(d.logPath, 20))
		}
		return nil
	case <-time.After(privateStopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("the private daemon did not stop within %s; killed", privateStopTimeout)
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// defaultImageCache is where a daemon with default settings keeps images.
func (a *app) defaultImageCache() string {
	return filepath.Join(a.dataDir(), "images")
}

// engineURLFor is the engine WebSocket of the daemon at daemonURL when
// that is the default address, where the engine's default is known too;
// "" otherwise (the WebSocket scenarios then need --engine-url).
func engineURLFor(daemonURL string) string {
	if daemonURL == "" || strings.TrimSuffix(daemonURL, "/") == "http://"+defaultListen {
		return "ws://" + defaultEngineListen
	}
	return ""
}
