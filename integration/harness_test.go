// Package integration holds end-to-end tests: they build the real hutch and
// hutch-agent binaries, start `hutch serve` as a separate process on a private
// data dir and drive it through the CLI and the Go client, booting real
// gVisor sandboxes. They need root and runsc; see testutil.RequiresIntegration.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// daemon is one `hutch serve` process under test.
type daemon struct {
	t       *testing.T
	cmd     *exec.Cmd
	dataDir string
	cfgPath string
	url     string
	log     *bytes.Buffer
	waitErr chan error
	c       *client.Client
	// agentPath overrides the agent binary when set.
	agentPath string
	// ids are the sandboxes created through create, checked for leftovers.
	ids []string
	// engineURL is the ws:// address of the engine WebSocket.
	engineURL string
	// token is the bearer token of c, when the daemon has api_tokens.
	token string
	// serveArgs are more flags of hutch serve (--socket, --kubeconfig, ...).
	serveArgs []string
	// issue 38: bin overrides the hutch binary when set; env is added to
	// the daemon's environment.
	bin string
	env []string
	// issue 35: netns, when set, is the network namespace (of
	// /run/netns) the daemon runs in, entered through nsenter.
	netns string
}

// binaries builds hutch and hutch-agent once per test process.
func binaries(t *testing.T) (hutch, agent string) {
	t.Helper()
	return testutil.BuildBinary(t, "./cmd/hutch"), testutil.BuildBinary(t, "./cmd/hutch-agent")
}

// baseConfig is the YAML every test daemon starts from: the shared image
// cache, so presets are built once per machine.
// baseConfig is the config of a test daemon, extra keys appended: the
// test image cache, and no warm pool sized by demand (warm_pool still pins
// one), so that each test runs only the sandboxes it creates.
func baseConfig(extra string) string {
	return autoPoolConfig("warm_pool_auto: false\n" + extra)
}

// autoPoolConfig is baseConfig with the warm pool's defaults: sized by
// demand unless extra says otherwise.
func autoPoolConfig(extra string) string {
	return "image_cache_dir: " + testutil.ImageCacheDir() + "\nmax_concurrent_exec_per_sandbox: 8\n" + extra
}

// startDaemon starts `hutch serve` on a new data dir with config YAML cfg.
func startDaemon(t *testing.T, cfg string) *daemon {
	t.Helper()
	return startDaemonWithAgent(t, cfg, "")
}

// startDaemonWithAgent is startDaemon with another agent binary ("" for the real one).
func startDaemonWithAgent(t *testing.T, cfg, agentPath string) *daemon {
	t.Helper()
	testutil.RequiresIntegration(t)
	return launchDaemon(t, cfg, agentPath)
}

// launchDaemon is startDaemonWithAgent without its check of the host:
// for a caller that checked what its runtime needs.
func launchDaemon(t *testing.T, cfg, agentPath string) *daemon {
	t.Helper()
	return launchDaemonAt(t, cfg, agentPath, "")
}

// launchDaemonAt is launchDaemon on data dir dataDir ("" for a new one
// under the test's temporary dir; issue 38: the disk-full test's is on a
// small file system).
func launchDaemonAt(t *testing.T, cfg, agentPath, dataDir string) *daemon {
	t.Helper()
	return launchDaemonEnv(t, cfg, agentPath, dataDir, nil)
}

// launchDaemonEnv is launchDaemonAt with env added to the daemon's
// environment.
func launchDaemonEnv(t *testing.T, cfg, agentPath, dataDir string, env []string) *daemon {
	t.Helper()
	dir := t.TempDir()
	if dataDir == "" {
		dataDir = filepath.Join(dir, "data")
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, dataDir: dataDir, cfgPath: cfgPath, agentPath: agentPath, env: env}
	d.start()
	t.Cleanup(func() {
		d.terminate()
		assertNoLeftovers(t, d.dataDir, d.ids...)
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log)
		}
	})
	return d
}

// start launches the daemon process on d's data dir and waits until it serves.
func (d *daemon) start() {
	t := d.t
	t.Helper()
	hutch, agent := binaries(t)
	if d.agentPath != "" {
		agent = d.agentPath
	}
	if d.bin != "" { // issue 38
		hutch = d.bin
	}
	d.cmd = exec.Command(hutch, "serve", "--config", d.cfgPath, "--listen", "127.0.0.1:0",
		"--engine-listen", "127.0.0.1:0", "--data-dir", d.dataDir,
		"--runsc-path", testutil.RunscPath(), "--agent-path", agent)
	d.cmd.Args = append(d.cmd.Args, d.serveArgs...)
	d.cmd.Env = append(os.Environ(), d.env...) // issue 38
	// issue 35: nsenter execs the daemon, which keeps its pid.
	if d.netns != "" {
		nsenter, err := exec.LookPath("nsenter")
		if err != nil {
			t.Fatal(err)
		}
		d.cmd.Path, d.cmd.Args = nsenter, append([]string{"nsenter", "--net=/run/netns/" + d.netns, "--"}, d.cmd.Args...)
	}
	// A test binary killed by its timeout (or by hand) takes its daemons
	// along: they stop their sandboxes as on any SIGTERM.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// The log goes through an io.Pipe, closed once Wait has copied all of
	// it (or given up on a descendant holding stderr, after WaitDelay), so
	// that every line is in d.log before waitErr says the daemon ended.
	stderr, stderrW := io.Pipe()
	d.cmd.Stderr, d.cmd.WaitDelay = stderrW, 5*time.Second
	d.log = &bytes.Buffer{}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		defer io.Copy(io.Discard, stderr) // past a line too long to scan
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.log.WriteString(line + "\n")
			var entry struct {
				Msg          string `json:"msg"`
				Listen       string `json:"listen"`
				EngineListen string `json:"engine_listen"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "hutch serving" {
				d.engineURL = "ws://" + entry.EngineListen
				addr <- entry.Listen
			}
		}
	}()
	d.waitErr = make(chan error, 1)
	go func() {
		err := d.cmd.Wait()
		stderrW.Close()
		<-logged
		d.waitErr <- err
	}()
	select {
	case a := <-addr:
		d.url = "http://" + a
	case err := <-d.waitErr:
		t.Fatalf("hutch serve exited: %v\n%s", err, d.log)
	case <-time.After(60 * time.Second):
		t.Fatalf("hutch serve did not start\n%s", d.log)
	}
	d.c = client.New(d.url, "")
}

// terminate stops the daemon with SIGTERM and waits for it.
func (d *daemon) terminate() {
	if d.cmd == nil || d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.waitErr:
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.waitErr
		d.t.Errorf("daemon did not exit within 20s of SIGTERM\n%s", d.log)
	}
}

// kill9 kills the daemon without letting it clean up.
func (d *daemon) kill9() {
	_ = d.cmd.Process.Kill()
	<-d.waitErr
}

// create makes a sandbox and registers its stop for cleanup.
func (d *daemon) create(req api.CreateRequest) string {
	d.t.Helper()
	// The first create may wait for a preset's build, which takes minutes
	// on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	resp, err := d.c.Create(ctx, req)
	if err != nil {
		d.t.Fatalf("create %+v: %v\n%s", req, err, d.log)
	}
	d.ids = append(d.ids, resp.SandboxID)
	return resp.SandboxID
}

// exec runs argv in sandbox id and fails the test on an hutch error.
func (d *daemon) exec(id string, argv ...string) api.ExecResponse {
	d.t.Helper()
	return d.execReq(api.ExecRequest{SandboxID: id, Argv: argv})
}

// execReq runs req, failing the test on an error or a timeout: a test
// that checks an exec's output must not read a cut-off one.
func (d *daemon) execReq(req api.ExecRequest) api.ExecResponse {
	d.t.Helper()
	resp, err := d.c.Exec(context.Background(), req)
	if err != nil {
		d.t.Fatalf("exec %q: %v", req.Argv, err)
	}
	if resp.TimedOut {
		d.t.Fatalf("exec %q timed out after %d ms; stderr %q", req.Argv, req.TimeoutMs, resp.Stderr)
	}
	return resp
}

// setupTimeoutMs is the exec timeout of a test's setup step: the
// daemon's maximum, since a busy machine may take long.
const setupTimeoutMs = 300_000

// setup runs a setup step in sandbox id and fails the test unless it
// exits 0 in time: a later check must not pass or fail on a step that
// did not happen.
func (d *daemon) setup(id string, argv ...string) {
	d.t.Helper()
	r := d.execReq(api.ExecRequest{SandboxID: id, Argv: argv, TimeoutMs: setupTimeoutMs})
	if r.ExitCode == nil || *r.ExitCode != 0 {
		d.t.Fatalf("setup %q: exit %v, stderr %q", argv, r.ExitCode, r.Stderr)
	}
}

// cli runs the hutch CLI against d and returns stdout, stderr and exit code.
func (d *daemon) cli(stdin string, args ...string) (string, string, int) {
	d.t.Helper()
	hutch, _ := binaries(d.t)
	cmd := exec.Command(hutch, args...)
	cmd.Env = append(os.Environ(), "HUTCH_URL="+d.url)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		d.t.Fatalf("running hutch %q: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// envelopeOf returns the error envelope of err, failing when it has none.
func envelopeOf(t *testing.T, err error) *api.ErrorEnvelope {
	t.Helper()
	var env *api.ErrorEnvelope
	if !errors.As(err, &env) {
		t.Fatalf("error %v carries no envelope", err)
	}
	return env
}

// wantCode asserts that err is an hutch error with code.
func wantCode(t *testing.T, err error, code string) *api.ErrorEnvelope {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	env := envelopeOf(t, err)
	if env.Code != code {
		t.Fatalf("got %s (%s), want %s", env.Code, env.Message, code)
	}
	return env
}
