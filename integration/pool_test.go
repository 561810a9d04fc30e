package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// runscSandboxIDs lists the ids of the sandboxes whose runsc-sandbox
// process belongs to dataDir: every sandbox the daemon runs, warm pool
// ones included (the id is the process's last argument).
func runscSandboxIDs(dataDir string) []string {
	var ids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("runsc-sandbox\x00")) || !bytes.Contains(b, []byte(dataDir)) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if id := args[len(args)-1]; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// poolReady reads how many sandboxes image's warm pool holds, from d's
// /metrics (as the owner whose client d.c is, when there are tokens).
func (d *daemon) poolReady(image string) float64 {
	d.t.Helper()
	return metricValue(d.scrape(d.token), `hutch_warm_pool_ready{image="`+image+`"}`)
}

// waitPoolReady waits until image's pool holds want sandboxes.
func (d *daemon) waitPoolReady(image string, want float64) {
	d.t.Helper()
	var got float64
	// The first fill may wait for the image's build on a busy machine.
	if testutil.Poll(5*time.Minute, func() bool { got = d.poolReady(image); return got == want }) {
		return
	}
	d.t.Fatalf("warm pool holds %v %s sandboxes, want %v\n%s", got, image, want, grepLines(d.scrape(d.token), "warm_pool"))
}

// wantClaims checks the claim counters of image's pool.
func (d *daemon) wantClaims(image string, hit, empty, shape float64) {
	d.t.Helper()
	text := d.scrape(d.token)
	for result, want := range map[string]float64{"hit": hit, "empty": empty, "shape": shape} {
		sample := `hutch_warm_pool_claims_total{image="` + image + `",result="` + result + `"}`
		if got := metricValue(text, sample); got != want {
			d.t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}

// memoryLimit reads the host cgroup memory limit of sandbox id.
func memoryLimit(t *testing.T, id string) uint64 {
	t.Helper()
	n, err := cgroupValue(id, "memory", "memory.limit_in_bytes", "memory.max")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cpuQuota reads the host cgroup CPU quota of sandbox id, in µs per
// 100 ms period.
func cpuQuota(t *testing.T, id string) uint64 {
	t.Helper()
	n, err := cgroupValue(id, "cpu", "cpu.cfs_quota_us", "cpu.max")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cgroupValue reads the first number of sandbox id's cgroup file: v1 in
// controller's hierarchy, v2 in the unified one.
func cgroupValue(id, controller, v1, v2 string) (uint64, error) {
	l, err := cgroups.Detect(cgroups.DefaultRoot)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(l.Path(controller, "hutch/"+id), v1)
	if l.V2 {
		file = filepath.Join(l.Path("", "hutch/"+id), v2)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	return strconv.ParseUint(first, 10, 64)
}

func TestWarmPool(t *testing.T) {
	d := startDaemon(t, baseConfig("max_concurrent_sandboxes: 3\nwarm_pool: {python: 2}\n"))
	ctx := context.Background()
	d.waitPoolReady("python", 2)
	pooled := runscSandboxIDs(d.dataDir)
	if len(pooled) != 2 {
		t.Fatalf("runsc runs sandboxes %v, want the 2 of the pool", pooled)
	}
	seen := slices.Clone(pooled)
	if l, err := d.c.List(ctx); err != nil || len(l.Sandboxes) != 0 {
		t.Fatalf("list = %+v, %v; pool sandboxes must not be listed", l, err)
	}

	// A create that fits takes a pool sandbox and gets its own env,
	// smaller memory limit, name and idle timeout.
	a := d.create(api.CreateRequest{Image: "python", Name: "warm", Env: api.Env{"GREETING=hello"}, MemoryMB: 256, IdleTimeoutSecs: 900})
	d.wantClaims("python", 1, 0, 0)
	if !slices.Contains(pooled, a) {
		t.Errorf("sandbox %s is not one of the pool's %v", a, pooled)
	}
	if out := d.exec(a, "sh", "-c", `echo "$GREETING"`); out.Stdout != "hello\n" {
		t.Errorf("env in a claimed sandbox: %+v", out)
	}
	if got := memoryLimit(t, a); got != 256<<20 {
		t.Errorf("host memory limit of the claimed sandbox = %d, want %d", got, 256<<20)
	}
	info, err := d.c.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if info.MemoryMB != 256 || info.IdleTimeoutSecs != 900 || info.Name == nil || *info.Name != "warm" || info.CPUs != 1 {
		t.Errorf("claimed sandbox = %+v, want memory 256, idle timeout 900, name warm, 1 cpu", info)
	}

	// The pool refills in the background.
	d.waitPoolReady("python", 2)
	seen = append(seen, runscSandboxIDs(d.dataDir)...)

	// A create that does not fit (more memory than the pool's) boots its
	// own sandbox, and a pool sandbox makes room for it: 2 live + pool ≤ 3.
	before := runscSandboxIDs(d.dataDir)
	b := d.create(api.CreateRequest{Image: "python", MemoryMB: 1024})
	d.wantClaims("python", 1, 0, 1)
	if slices.Contains(before, b) {
		t.Errorf("a create asking for 1024 MiB took pool sandbox %s", b)
	}
	for range 20 {
		if ready := d.poolReady("python"); ready > 1 {
			t.Fatalf("pool holds %v sandboxes beside 2 live ones; max_concurrent_sandboxes is 3", ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.waitPoolReady("python", 1)

	// The last slot goes to a create from the pool; then capacity is
	// reached, and the pool does not refill.
	c := d.create(api.CreateRequest{Image: "python"})
	d.wantClaims("python", 2, 0, 1)
	_, err = d.c.Create(ctx, api.CreateRequest{Image: "python"})
	wantCode(t, err, "S400")
	time.Sleep(1500 * time.Millisecond) // longer than the refill's room poll
	if ready := d.poolReady("python"); ready != 0 {
		t.Errorf("pool refilled to %v with 3 live sandboxes of 3", ready)
	}
	if n := len(runscSandboxIDs(d.dataDir)); n != 3 {
		t.Errorf("runsc runs %d sandboxes at capacity 3", n)
	}

	// Room again: the pool refills.
	if _, err := d.c.Stop(ctx, c, true); err != nil {
		t.Fatal(err)
	}
	d.waitPoolReady("python", 1)
	seen = append(seen, runscSandboxIDs(d.dataDir)...)
	if l, err := d.c.List(ctx); err != nil || len(l.Sandboxes) != 3 {
		t.Errorf("list = %+v, %v; want the 3 created sandboxes only", l, err)
	}

	// Shutdown destroys pool sandboxes too.
	d.terminate()
	assertNoLeftovers(t, d.dataDir, seen...)
}

// TestWarmPoolWithOwners: pool sandboxes belong to nobody until claimed;
// a claimed one is its creator's alone.
func TestWarmPoolWithOwners(t *testing.T) {
	d := startDaemon(t, baseConfig("warm_pool: {python: 1}\napi_tokens:\n  alice: "+aliceToken+"\n  bob: "+bobToken+"\n"))
	ctx := context.Background()
	alice, bob := client.New(d.url, aliceToken), client.New(d.url, bobToken)
	d.c, d.token = alice, aliceToken
	d.waitPoolReady("python", 1)
	for name, c := range map[string]*client.Client{"alice": alice, "bob": bob} {
		if l, err := c.List(ctx); err != nil || len(l.Sandboxes) != 0 {
			t.Fatalf("%s lists %+v, %v before any create; pool sandboxes belong to nobody", name, l, err)
		}
	}
	pooled := runscSandboxIDs(d.dataDir)
	a := d.create(api.CreateRequest{Image: "python", Name: "alices"})
	d.wantClaims("python", 1, 0, 0)
	if !slices.Contains(pooled, a) {
		t.Fatalf("alice's sandbox %s is not the pool's %v", a, pooled)
	}
	if l, err := alice.List(ctx); err != nil || len(l.Sandboxes) != 1 || l.Sandboxes[0].SandboxID != a {
		t.Errorf("alice lists %+v, %v; want her claimed sandbox", l, err)
	}
	if l, err := bob.List(ctx); err != nil || len(l.Sandboxes) != 0 {
		t.Errorf("bob lists %+v, %v; want nothing", l, err)
	}
	_, err := bob.Exec(ctx, api.ExecRequest{SandboxID: a, Cmd: "true"})
	wantCode(t, err, "S002")
	// The refill is nobody's either.
	d.waitPoolReady("python", 1)
	if l, err := bob.List(ctx); err != nil || len(l.Sandboxes) != 0 {
		t.Errorf("bob lists %+v, %v after the refill; want nothing", l, err)
	}
}

func TestWarmPoolOfADaemonWithout(t *testing.T) {
	d := startDaemon(t, autoPoolConfig("warm_pool: {}\n"))
	d.create(api.CreateRequest{Image: "python"})
	if text := d.scrape(""); strings.Contains(text, "hutch_warm_pool_") {
		t.Errorf("a daemon without warm_pool exports pool metrics:\n%s", grepLines(text, "warm_pool"))
	}
	if ids := runscSandboxIDs(d.dataDir); len(ids) != 1 {
		t.Errorf("runsc runs %v, want just the created sandbox", ids)
	}
}

// TestWarmPoolAutomatic: with no warm_pool, the daemon keeps one sandbox
// of the first allowed preset (its image is built), which serves the first
// create; a larger shape asked for grows the pool to its bound, which
// serves the next create of that shape and a smaller one, their cgroup
// limits lowered at the claim; shutdown destroys them all.
func TestWarmPoolAutomatic(t *testing.T) {
	d := startDaemon(t, autoPoolConfig(""))
	d.waitPoolReady("python", 1)
	seen := runscSandboxIDs(d.dataDir)
	a := d.create(api.CreateRequest{Image: "python"})
	d.wantClaims("python", 1, 0, 0)
	if !slices.Contains(seen, a) {
		t.Errorf("first create %s is not the pool's %v", a, seen)
	}
	if r := d.exec(a, "true"); r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("exec in the pool's sandbox: %+v", r)
	}

	// A pool for every shape (issue 46: 3): a create larger than the
	// pool boots its own, and the pool grows to its bound, 2 cpus and
	// 1024 MiB, which serves that shape, one in between and the default.
	big := api.CreateRequest{Image: "python", CPUs: 2, MemoryMB: 1024}
	live := []string{a, d.create(big)}
	d.wantClaims("python", 1, 0, 1)
	var pooled []string
	atBound := func() bool {
		pooled = runscSandboxIDs(d.dataDir)
		for _, id := range pooled {
			if mem, err := cgroupValue(id, "memory", "memory.limit_in_bytes", "memory.max"); err == nil &&
				!slices.Contains(live, id) && mem == 1024<<20 && d.poolReady("python") == 1 {
				return true
			}
		}
		return false
	}
	for i, tt := range []struct {
		req       api.CreateRequest
		cpus, mem uint64
	}{
		{big, 2, 1024},
		{api.CreateRequest{Image: "python", CPUs: 1, MemoryMB: 768}, 1, 768},
	} {
		if !testutil.Poll(2*time.Minute, atBound) {
			t.Fatalf("no pool sandbox of 1024 MiB among %v\n%s", pooled, grepLines(d.scrape(d.token), "warm_pool"))
		}
		id := d.create(tt.req)
		live = append(live, id)
		d.wantClaims("python", float64(2+i), 0, 1)
		if !slices.Contains(pooled, id) {
			t.Errorf("create of %d cpus %d MiB %s is not one of the pool's %v", tt.cpus, tt.mem, id, pooled)
		}
		if got := memoryLimit(t, id); got != tt.mem<<20 {
			t.Errorf("host memory limit of the pooled %d MiB sandbox = %d", tt.mem, got)
		}
		if got := cpuQuota(t, id); got != tt.cpus*100000 {
			t.Errorf("host CPU quota of the pooled %d-cpu sandbox = %d, want %d per 100 ms", tt.cpus, got, tt.cpus*100000)
		}
		// What the guest sees stays the boot's (docs/usage/warm-pool.md).
		r := d.exec(id, "sh", "-c", "nproc; grep MemTotal /proc/meminfo")
		t.Logf("guest of the pooled %d-cpu %d MiB sandbox sees: %q", tt.cpus, tt.mem, r.Stdout)
	}
	seen = append(append(seen, pooled...), runscSandboxIDs(d.dataDir)...)
	d.terminate()
	assertNoLeftovers(t, d.dataDir, seen...)
}

// TestWarmPoolFollowsItsImage removes and re-pulls a pooled custom image:
// the removal succeeds (the pool lets go of the image), and after a pull
// of a new version the pool serves that version.
func TestWarmPoolFollowsItsImage(t *testing.T) {
	testutil.RequiresIntegration(t)
	reg := ocitest.NewRegistry(t, "", "")
	version := func(v string) v1.Image {
		base := ocitest.Layer(t, ocitest.BusyboxFiles(t)...)
		top := ocitest.Layer(t, ocitest.Reg("srv/version", v, 0o644))
		return ocitest.Image(t, ocitest.Config{Env: []string{"PATH=/bin"}}, base, top)
	}
	ref := reg.Push(t, "tools/app:1", version("one"))
	d := startDaemon(t, customConfig(t, "", fmt.Sprintf("custom_images: {app: %q}\nimage_allowlist: [app]\nwarm_pool: {app: 1}\n", ref)))
	ctx := context.Background()
	d.waitPoolReady("app", 1)
	before := runscSandboxIDs(d.dataDir)

	if out, errOut, code := d.cli("", "image", "rm", "app"); code != 0 || out != "app: removed\n" {
		t.Fatalf("image rm of a pooled image: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The pool sandbox that ran the removed image is gone.
	if after := runscSandboxIDs(d.dataDir); len(before) != 1 || slices.Contains(after, before[0]) {
		t.Errorf("pool sandboxes before image rm %v, right after %v", before, after)
	}
	// The pool pulls it again (auto_install) and refills.
	d.waitPoolReady("app", 1)

	reg.Push(t, "tools/app:1", version("two"))
	if _, err := d.c.PullImage(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	d.waitPoolReady("app", 1)
	id := d.create(api.CreateRequest{Image: "app"})
	d.wantClaims("app", 1, 0, 0)
	if r := d.exec(id, "cat", "/srv/version"); r.Stdout != "two" {
		t.Errorf("a create from the pool after a pull runs %q, want the new version \"two\"", r.Stdout)
	}
}

// runscSandboxArgs returns the command line of the runsc-sandbox process
// of sandbox id.
func runscSandboxArgs(t *testing.T, id string) string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.HasPrefix(b, []byte("runsc-sandbox\x00")) && bytes.HasSuffix(b, []byte("\x00"+id+"\x00")) {
			return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
	t.Fatalf("no runsc-sandbox process for sandbox %s", id)
	return ""
}

// TestSystrapFastPath: systrap_fast_path reaches the sandboxes; it is on
// unless the config says off.
func TestSystrapFastPath(t *testing.T) {
	for _, tt := range []struct {
		mode string
		off  bool
	}{
		{"", false},
		{"systrap_fast_path: on\n", false},
		{"systrap_fast_path: off\n", true},
	} {
		d := startDaemon(t, baseConfig(tt.mode))
		id := d.create(api.CreateRequest{Image: "python"})
		if r := d.exec(id, "true"); r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("%q: exec true: %+v", tt.mode, r)
		}
		args := runscSandboxArgs(t, id)
		if got := strings.Contains(args, "--systrap-disable-fast-path=true"); got != tt.off {
			t.Errorf("config %q: fast path off = %v, want %v (%s)", tt.mode, got, tt.off, args)
		}
		d.terminate()
	}
}
