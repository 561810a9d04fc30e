package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/bench"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Template builds (issue 39) on real sandboxes: a two-stage Dockerfile
// with an ARG, a COPY of a context with a .dockerignore, a USER and a
// start command running a python HTTP server; a rebuild hits the cache at
// every step, a changed file rebuilds from its COPY; a sandbox of the
// template answers through its preview URL with the server it did not
// start; a bad line is refused with its number; deleting the template
// frees its layers.

const buildDockerfile = `ARG GREETING=hello
FROM python AS gen
ARG GREETING
RUN echo "$GREETING from stage one" > /greeting.txt

FROM python
RUN useradd -m web && chown web /srv && head -c 4194304 /dev/urandom > /opt/blob
WORKDIR /srv
COPY --chown=web:web app/ /srv/
COPY --from=gen /greeting.txt /srv/greeting.txt
USER web
ENV PORT=8080
CMD sh -c "python3 -c 'import uuid; print(uuid.uuid4())' > /srv/started.txt && exec python3 -m http.server $PORT --bind 127.0.0.1"
`

func TestTemplateBuild(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Dockerfile", buildDockerfile)
	write(".dockerignore", "app/secret.txt\n")
	write("app/index.html", "v1\n")
	write("app/secret.txt", "not for the image\n")
	build := func() (string, string) {
		t.Helper()
		out, errOut, code := d.cli("", "template", "build", "--name", "web", "--build-arg", "GREETING=hi", "--ready-port", "8080", dir)
		if code != 0 || strings.TrimSpace(out) != "web" {
			t.Fatalf("hutch template build: code %d stdout %q stderr:\n%s", code, out, errOut)
		}
		return out, errOut
	}
	_, log := build()
	if !strings.Contains(log, "line 4: RUN") || !strings.Contains(log, "starting: /bin/sh -c") {
		t.Errorf("the build's progress:\n%s", log)
	}
	layersDir := filepath.Join(d.dataDir, "snapshots", "build", "layers")
	if status, body := d.raw("GET", "/v1/events?type=template.build.*", "", ""); status != 200 ||
		!strings.Contains(body, `"template.build.started"`) || !strings.Contains(body, `"template.build.step"`) || !strings.Contains(body, `"template.build.done"`) {
		t.Errorf("the build's events: %d %s", status, body)
	}

	t.Run("a sandbox of the template has the app running", func(t *testing.T) {
		id := d.create(api.CreateRequest{Template: "web"})
		if r := d.exec(id, "sh", "-c", "cat /srv/greeting.txt; ls /srv; stat -c %U /srv/index.html"); r.Stdout != "hi from stage one\ngreeting.txt\nindex.html\nstarted.txt\nweb\n" {
			t.Errorf("the template's files and user: %q %q", r.Stdout, r.Stderr)
		}
		if _, err := d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8080}); err != nil {
			t.Fatal(err)
		}
		url := d.url + "/v1/sandboxes/" + id + "/ports/8080/"
		var status int
		var body string
		testutil.Poll(20*time.Second, func() bool {
			status, body = httpGet(t, url+"started.txt")
			return status == 200
		})
		// The start command wrote a random token once, at the build (the
		// ready port answers after it): another sandbox of the template
		// has the same one.
		// Its files are shared, not copied: each more sandbox of the
		// template adds at most 1 MiB to the data dir (its bundle, and its
		// own writable layer with what the start command wrote).
		before := bench.DataDirBytes(d.dataDir)
		other := d.create(api.CreateRequest{Template: "web"})
		mid := bench.DataDirBytes(d.dataDir)
		d.create(api.CreateRequest{Template: "web"})
		after := bench.DataDirBytes(d.dataDir)
		if info, err := d.c.GetTemplate(ctx, "web"); err != nil {
			t.Errorf("template get: %v", err)
		} else {
			t.Logf("the data dir grew %d KiB, then %d KiB, for two more sandboxes of the template (its layer is %d KiB)",
				(mid-before)>>10, (after-mid)>>10, info.LayerBytes>>10)
			if info.LayerBytes < 4<<20 {
				t.Errorf("the layer has %d KiB: too little for a copy of it to show", info.LayerBytes>>10)
			}
			if mid-before > 1<<20 || after-mid > 1<<20 {
				t.Errorf("another sandbox of the template took %d KiB, then %d KiB, of disk: its files are not shared", (mid-before)>>10, (after-mid)>>10)
			}
		}
		if r := d.exec(other, "cat", "/srv/started.txt"); status != 200 || len(body) < 32 || r.Stdout != body {
			t.Fatalf("the server's start token: %d %q, another sandbox's %q", status, body, r.Stdout)
		}
		if status, body := httpGet(t, url+"index.html"); status != 200 || body != "v1\n" {
			t.Errorf("index.html: %d %q", status, body)
		}
		ps, err := d.c.ListProcesses(ctx, id)
		server := false
		for _, p := range ps.Processes {
			server = server || (strings.Contains(p.Command, "http.server") && p.User == "web")
		}
		if err != nil || !server {
			t.Errorf("no server running as USER web: %+v %v", ps, err)
		}
	})

	t.Run("a rebuild hits the cache; a changed file rebuilds from its COPY", func(t *testing.T) {
		_, log := build()
		if strings.Count(log, "(cached)") != 10 || strings.Contains(log, "starting:") {
			t.Errorf("an unchanged rebuild ran steps or its start command again:\n%s", log)
		}
		t.Logf("an unchanged rebuild: %s", log[strings.LastIndex(log, "built web"):])
		write("app/index.html", "v2\n")
		_, log = build()
		if !strings.Contains(log, "line 8: WORKDIR /srv (cached)") || strings.Contains(log, "line 9: COPY --chown=web:web app/ /srv/ (cached)") ||
			strings.Contains(log, "line 10: COPY --from=gen /greeting.txt /srv/greeting.txt (cached)") {
			t.Errorf("a rebuild after a change:\n%s", log)
		}
		id := d.create(api.CreateRequest{Template: "web"})
		if r := d.exec(id, "cat", "/srv/index.html"); r.Stdout != "v2\n" {
			t.Errorf("the rebuilt template serves %q", r.Stdout)
		}
	})

	t.Run("a bad line is refused with its number", func(t *testing.T) {
		status, body := d.raw("POST", "/v1/templates/build", "", `{"name":"bad","dockerfile":"FROM python\nRUN true\nHEALTHCHECK CMD true\n"}`)
		if status != 400 || !strings.Contains(body, "S001") || !strings.Contains(body, "line 3") {
			t.Errorf("HEALTHCHECK: %d %s", status, body)
		}
		df, _ := json.Marshal(map[string]string{"name": "bad", "dockerfile": "FROM python\nRUN echo before-failing && exit 3\n"})
		status, body = d.raw("POST", "/v1/templates/build", "", string(df))
		if !strings.Contains(body, "line 2") || !strings.Contains(body, "before-failing") {
			t.Errorf("a failing RUN: %d %s", status, body)
		}
	})

	t.Run("deleting the template frees its layers", func(t *testing.T) {
		if n := countFiles(layersDir); n == 0 {
			t.Fatalf("no layers in %s", layersDir)
		}
		// Its sandboxes end first: a tree stays while a sandbox's root is
		// mounted on it.
		for _, id := range d.ids {
			if _, err := d.c.Stop(ctx, id, true); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.c.DeleteTemplate(ctx, "web"); err != nil {
			t.Fatal(err)
		}
		if n := countFiles(layersDir); n != 0 {
			t.Errorf("%d layers left after the delete", n)
		}
		if n := countFiles(filepath.Join(d.dataDir, "snapshots", "build", "trees")); n != 0 {
			t.Errorf("%d layer trees left after the delete", n)
		}
	})
}

// httpGet is a GET's status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// countFiles counts the entries of dir.
func countFiles(dir string) int {
	e, _ := os.ReadDir(dir)
	return len(e)
}
