package integration

// End-to-end tests of the catalog, the allowlist and caps, and custom OCI
// images: the daemon pulls images the tests build from busybox out of
// go-containerregistry's in-process registry, served by the test process
// on 127.0.0.1 (plain HTTP), into a private image cache.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// customConfig is the YAML of a daemon with image cache dir cache (a new one
// when ""), and extra keys (custom_images, image_allowlist, ...).
func customConfig(t *testing.T, cache, extra string) string {
	if cache == "" {
		cache = filepath.Join(t.TempDir(), "cache")
	}
	return "image_cache_dir: " + cache + "\nmax_concurrent_exec_per_sandbox: 8\nwarm_pool_auto: false\n" + extra
}

// appImage is a two-layer busybox image running as app (1000) in
// /srv/work with GREETING set; its second layer deletes /bin/rm.
func appImage(t *testing.T) (v1.Image, v1.Layer) {
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t)...)
	top := ocitest.Layer(t, ocitest.Whiteout("bin", "rm"), ocitest.Reg("srv/marker", "custom image\n", 0o644))
	return ocitest.Image(t, ocitest.Config{Env: []string{"GREETING=hello", "PATH=/bin"}, WorkingDir: "/srv/work", User: "app"}, base, top), base
}

func TestCustomImageEndToEnd(t *testing.T) {
	testutil.RequiresIntegration(t)
	reg := ocitest.NewRegistry(t, "", "")
	img, _ := appImage(t)
	ref := reg.Push(t, "tools/app:1", img)
	d := startDaemon(t, customConfig(t, "", fmt.Sprintf("custom_images: {app: %q}\nimage_allowlist: [python, app]\n", ref)))
	ctx := context.Background()

	cat, err := d.c.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.CatalogImage{{Name: "app", OCIRef: ref, Kind: "custom"}}
	presets := []string{"python", "node", "python-data", "e2b-base"}
	if len(cat.Images) != len(presets)+1 || cat.Images[len(presets)] != want[0] {
		t.Fatalf("catalog = %+v", cat.Images)
	}
	for i, name := range presets {
		if cat.Images[i].Name != name || cat.Images[i].Kind != "preset" {
			t.Fatalf("catalog = %+v", cat.Images)
		}
	}
	if out, _, code := d.cli("", "catalog"); code != 0 || !strings.Contains(out, "app") || !strings.Contains(out, ref) {
		t.Fatalf("hutch catalog: code %d\n%s", code, out)
	}

	start := time.Now()
	id := d.create(api.CreateRequest{Image: "app", Env: api.Env{"EXTRA=1"}})
	t.Logf("first create (pull, unpack, boot): %v", time.Since(start).Round(time.Millisecond))
	for _, tt := range []struct {
		argv []string
		want []string
	}{
		{[]string{"id"}, []string{"uid=1000(app) gid=1000(app)", "10(wheel)", "2000(extra)"}},
		{[]string{"pwd"}, []string{"/srv/work\n"}},
		{[]string{"env"}, []string{"GREETING=hello\n", "EXTRA=1\n", "PATH=/bin\n", "HOME=/home/app\n"}},
		{[]string{"cat", "/srv/marker"}, []string{"custom image\n"}},
		{[]string{"sh", "-c", "test -e /bin/rm && echo present || echo deleted"}, []string{"deleted\n"}},
	} {
		r := d.exec(id, tt.argv...)
		for _, w := range tt.want {
			if !strings.Contains(r.Stdout, w) || !r.Success {
				t.Errorf("%v: %+v; want stdout containing %q", tt.argv, r, w)
			}
		}
	}
	// exec-time env and workdir win over the image's.
	r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "echo $GREETING; pwd"}, Env: api.Env{"GREETING=bye"}, Workdir: "/tmp"})
	if err != nil || r.Stdout != "bye\n/tmp\n" {
		t.Errorf("exec with env and workdir: %+v, %v", r, err)
	}

	list, err := d.c.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Images, func(im api.ImageInfo) bool { return im.Name == "app" })
	if i < 0 || list.Images[i].State != "ready" || list.Images[i].InUse != 1 || !list.Images[i].Allowed || len(list.Images[i].ID) != 64 {
		t.Fatalf("image list = %+v", list.Images)
	}

	// rm is refused while the sandbox runs, then works.
	_, errOut, code := d.cli("", "image", "rm", "app")
	if code != 1 || !strings.Contains(errOut, "S111") || !strings.Contains(errOut, id) {
		t.Fatalf("image rm of a used image: code %d, stderr %q", code, errOut)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := d.cli("", "image", "rm", "app"); code != 0 || out != "app: removed\n" {
		t.Fatalf("image rm: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if st, err := d.c.ImageStatus(ctx, "app"); err != nil || st.State != "missing" {
		t.Fatalf("status after rm = %+v, %v", st, err)
	}
	out, errOut, code := d.cli("", "image", "pull", "app")
	if code != 0 || !strings.HasPrefix(out, "app: ready ") {
		t.Fatalf("image pull: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Logf("hutch image pull app: %s", out)
	out, _, _ = d.cli("", "image", "ls")
	t.Logf("hutch image ls:\n%s", out)
	// Pulled again, it boots again.
	id2 := d.create(api.CreateRequest{Image: "app"})
	if r := d.exec(id2, "cat", "/srv/marker"); r.Stdout != "custom image\n" {
		t.Errorf("after re-pull: %+v", r)
	}
}

func TestImagePolicy(t *testing.T) {
	testutil.RequiresIntegration(t)
	reg := ocitest.NewRegistry(t, "", "")
	img, _ := appImage(t)
	ref := reg.Push(t, "tools/app:1", img)
	foreign := ocitest.Index(t, ocitest.Image(t, ocitest.Config{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}, ocitest.Layer(t, ocitest.Reg("x", "", 0o644))))
	foreignRef := reg.PushIndex(t, "tools/foreign:1", foreign)
	// Its own layer: the blob corrupted is shared with no other image.
	cl := ocitest.Layer(t, ocitest.Reg("data", strings.Repeat("x", 64<<10), 0o644))
	corruptRef := reg.Push(t, "tools/corrupt:1", ocitest.Image(t, ocitest.Config{}, cl))
	bd, err := cl.Digest()
	if err != nil {
		t.Fatal(err)
	}
	reg.Corrupt(bd)

	cacheDir := filepath.Join(t.TempDir(), "cache")
	cfg := customConfig(t, cacheDir, fmt.Sprintf(`custom_images: {app: %q, hidden: %q, foreign: %q, corrupt: %q}
image_allowlist: [app, foreign, corrupt]
auto_install: false
max_concurrent_sandboxes: 2
default_memory_mb: 128
per_image_caps: {app: {max_cpus: 1, max_memory_mb: 128}}
`, ref, ref, foreignRef, corruptRef))
	d := startDaemon(t, cfg)
	ctx := context.Background()
	create := func(req api.CreateRequest) error {
		_, err := d.c.Create(ctx, req)
		return err
	}

	tests := []struct {
		name string
		req  api.CreateRequest
		code string
		msg  []string
	}{
		{"preset not allowlisted", api.CreateRequest{Image: "python"}, "S100", []string{`"python" is not allowed`, "allowed images: app, corrupt, foreign"}},
		{"custom image in the catalog but not allowlisted", api.CreateRequest{Image: "hidden"}, "S100", []string{`"hidden" is not allowed`}},
		{"OCI ref as image", api.CreateRequest{Image: ref}, "S100", []string{"not an OCI reference"}},
		{"cpus over the cap", api.CreateRequest{Image: "app", CPUs: 2}, "S400", []string{"over the cap of 1"}},
		{"memory over the cap", api.CreateRequest{Image: "app", MemoryMB: 256}, "S400", []string{"memory_mb 256 is over the cap of 128"}},
		{"not pulled, auto_install false", api.CreateRequest{Image: "app", MemoryMB: 128}, "S101", []string{"hutch image pull app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := wantCode(t, create(tt.req), tt.code)
			for _, m := range tt.msg {
				if !strings.Contains(env.Message, m) {
					t.Errorf("message %q lacks %q", env.Message, m)
				}
			}
		})
	}

	// Pull failures are S102, retryable, and cache nothing.
	for _, tt := range []struct{ name, msg, note string }{
		{"foreign", "no linux/", "this host is linux/"},
		{"corrupt", "pulling image corrupt", ""},
	} {
		_, err := d.c.PullImage(ctx, tt.name)
		env := wantCode(t, err, "S102")
		if !env.Retryable || !strings.Contains(env.Message, tt.msg) || !strings.Contains(env.FixNote, tt.note) {
			t.Errorf("pull %s: %+v", tt.name, env)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(cacheDir, "images")); len(entries) != 0 {
		t.Errorf("failed pulls left %d cache entries", len(entries))
	}

	// Pre-pulled, the image boots with auto_install off; capacity comes
	// first of all checks.
	if out, errOut, code := d.cli("", "image", "pull", "app"); code != 0 {
		t.Fatalf("image pull: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	d.create(api.CreateRequest{Image: "app", MemoryMB: 128})
	d.create(api.CreateRequest{Image: "app"})
	env := wantCode(t, create(api.CreateRequest{Image: "not-in-catalog"}), "S400")
	if !strings.Contains(env.Message, "max_concurrent_sandboxes=2") {
		t.Errorf("capacity message: %q", env.Message)
	}
}

func TestConcurrentCreatesPullOnce(t *testing.T) {
	testutil.RequiresIntegration(t)
	reg := ocitest.NewRegistry(t, "", "")
	img, base := appImage(t)
	// A multi-platform index whose host entry is the image.
	idx := ocitest.Index(t, img, ocitest.Image(t, ocitest.Config{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}))
	ref := reg.PushIndex(t, "tools/multi:1", idx)
	bd, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	pushed := reg.BlobGets(bd)
	d := startDaemon(t, customConfig(t, "", fmt.Sprintf("custom_images: {multi: %q}\nimage_allowlist: [multi]\n", ref)))

	var wg sync.WaitGroup
	ids := make([]string, 3)
	errs := make([]error, 3)
	for i := range ids {
		wg.Go(func() {
			resp, err := d.c.Create(context.Background(), api.CreateRequest{Image: "multi"})
			ids[i], errs[i] = resp.SandboxID, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		d.ids = append(d.ids, ids[i])
		if r := d.exec(ids[i], "whoami"); r.Stdout != "app\n" {
			t.Errorf("sandbox %d: whoami = %+v", i, r)
		}
	}
	if n := reg.BlobGets(bd) - pushed; n != 1 {
		t.Errorf("three creates downloaded the base layer %d times, want once", n)
	}
}

func TestPullWithDockerConfigAuth(t *testing.T) {
	testutil.RequiresIntegration(t)
	reg := ocitest.NewRegistry(t, "robot", "hunter2")
	img, _ := appImage(t)
	ref := reg.Push(t, "private/app:1", img)
	cfg := fmt.Sprintf("custom_images: {private: %q}\nimage_allowlist: [private]\n", ref)

	// The daemon reads the standard Docker config: $DOCKER_CONFIG/config.json.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	d := startDaemon(t, customConfig(t, "", cfg))
	_, err := d.c.Create(context.Background(), api.CreateRequest{Image: "private"})
	if env := wantCode(t, err, "S102"); !strings.Contains(env.Message, "Docker config") {
		t.Errorf("unauthenticated pull: %q", env.Message)
	}
	d.terminate()

	t.Setenv("DOCKER_CONFIG", ocitest.DockerConfig(t, reg.Host, "robot", "hunter2"))
	d = startDaemon(t, customConfig(t, "", cfg))
	id := d.create(api.CreateRequest{Image: "private"})
	if r := d.exec(id, "whoami"); r.Stdout != "app\n" {
		t.Errorf("whoami = %+v", r)
	}
}

func TestMinimalImageBoots(t *testing.T) {
	testutil.RequiresIntegration(t)
	bb, err := os.ReadFile(testutil.RequiresBinary(t, ocitest.BusyboxPath))
	if err != nil {
		t.Fatal(err)
	}
	// Only a static binary: no /proc, /dev, /tmp, /etc, no PATH or user.
	layer := ocitest.Layer(t, ocitest.Reg("busybox", string(bb), 0o755))
	dir, ghost := filepath.Join(t.TempDir(), "layout"), filepath.Join(t.TempDir(), "ghost")
	writeLayout(t, dir, ocitest.Image(t, ocitest.Config{}, layer))
	// The same, naming a user it does not define.
	writeLayout(t, ghost, ocitest.Image(t, ocitest.Config{User: "ghost"}, layer))
	d := startDaemon(t, customConfig(t, "", fmt.Sprintf("custom_images: {tiny: %q, ghost: %q}\nimage_allowlist: [tiny, ghost]\n",
		"oci-layout:"+dir, "oci-layout:"+ghost)))
	id := d.create(api.CreateRequest{Image: "tiny"})
	r := d.exec(id, "/busybox", "sh", "-c", "echo $HOME $PATH; /busybox id -u; /busybox ls -d /proc/self")
	if !r.Success || !strings.HasPrefix(r.Stdout, "/root /usr/local/sbin:") || !strings.Contains(r.Stdout, "\n0\n") {
		t.Errorf("exec in a minimal image: %+v", r)
	}
	_, err = d.c.Create(context.Background(), api.CreateRequest{Image: "ghost"})
	if env := wantCode(t, err, "S300"); !strings.Contains(env.Message, `image user "ghost" is not in the image's /etc/passwd`) {
		t.Errorf("create with an undefined user: %q", env.Message)
	}
}

func TestServeRefusesBadCustomImages(t *testing.T) {
	testutil.RequiresIntegration(t)
	hutch, agent := binaries(t)
	for _, tt := range []struct{ yaml, want string }{
		{"custom_images: {python: \"evil.example.com/python:latest\"}\n", `custom_images key "python" shadows the preset`},
		{"workers:\n  - name: iii-sandbox\n    config:\n      custom_images: {node: \"x.example.com/node:1\"}\n", `custom_images key "node" shadows the preset`},
		{"custom_images: {bad: \"Not A Ref\"}\n", "custom_images.bad"},
		{"per_image_caps: {app: {max_cpus: nope}}\n", "line 1"},
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(tt.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, hutch, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--engine-listen", "",
			"--data-dir", filepath.Join(dir, "data"), "--runsc-path", testutil.RunscPath(), "--agent-path", agent)
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(out), tt.want) {
			t.Errorf("hutch serve with %q: %v\n%s\nwant a failure naming %q", tt.yaml, err, out, tt.want)
		}
	}
}

// writeLayout writes img as the only image of a new OCI layout at dir.
func writeLayout(t *testing.T, dir string, img v1.Image) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
}
