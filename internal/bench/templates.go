package bench

// Template scenarios (issue 39): an unchanged rebuild of a 10-step
// Dockerfile; a create from a template whose start command is an HTTP
// server, to the first 200 through its preview URL, against a cold boot
// of the same image that starts the server itself; and the disk each more
// sandbox of a template takes in the daemon's data directory.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// Scenario names of the templates.
const (
	NameTemplateRebuild = "template-rebuild"
	NameTemplateHTTP    = "template-create-http"
	NameTemplateDisk    = "template-disk"
)

// benchTemplate names the template the scenarios build (and delete).
const benchTemplate = "hutch-bench-template"

// templateServerPort is where the template's server listens.
const templateServerPort = 8000

// rebuildDockerfile has 10 steps, each kind a rebuild checks: files
// (RUN, WORKDIR) and configuration (ENV, ARG, USER, ...).
const rebuildDockerfile = `FROM %s
ARG GREETING=hello
ENV APP_HOME=/srv/app
WORKDIR /srv/app
RUN echo "$GREETING" > greeting.txt
RUN mkdir -p data && echo one > data/one.txt
RUN echo two > data/two.txt
ENV PORT=8000
LABEL bench=hutch
EXPOSE 8000
CMD python3 -m http.server 8000 --bind 127.0.0.1
`

// serverDockerfile is the template of the HTTP scenarios: a server
// started once at build time.
const serverDockerfile = `FROM %s
WORKDIR /srv
RUN echo hello > index.html
CMD python3 -m http.server 8000 --bind 127.0.0.1
`

// buildBenchTemplate builds dockerfile as the benchmark's template and
// returns the build's answer; an error unless it built.
func (e *env) buildBenchTemplate(ctx context.Context, dockerfile string, readyPort uint16) (api.TemplateBuildResponse, error) {
	return e.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: benchTemplate, Dockerfile: fmt.Sprintf(dockerfile, e.opts.Image), ReadyPort: readyPort}, func(api.TemplateBuildEvent) error { return nil })
}

// dropBenchTemplate deletes the benchmark's template (after its sandboxes
// are stopped: its shared files go once none runs on them).
func (e *env) dropBenchTemplate(ctx context.Context) {
	e.stops.wg.Wait()
	if _, err := e.c.DeleteTemplate(context.WithoutCancel(ctx), benchTemplate); err != nil {
		e.progress("bench: deleting template %s: %v", benchTemplate, err)
	}
}

// templateRebuild times rebuilds of an unchanged 10-step Dockerfile, each
// of which must hit the cache at every step.
func templateRebuild(ctx context.Context, e *env) (Result, error) {
	first, err := e.buildBenchTemplate(ctx, rebuildDockerfile, 0)
	if err != nil {
		return Result{}, err
	}
	defer e.dropBenchTemplate(ctx)
	samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		resp, err := e.buildBenchTemplate(ctx, rebuildDockerfile, 0)
		took := time.Since(start)
		if err == nil && resp.CachedSteps != resp.Steps {
			err = fmt.Errorf("an unchanged rebuild ran %d of its %d steps", resp.Steps-resp.CachedSteps, resp.Steps)
		}
		return took, err
	})
	res := latencyResult(samples)
	res.Note = fmt.Sprintf("%d steps; the first build took %d ms", first.Steps, first.DurationMs)
	return res, err
}

// templateCreateHTTP times creates from a template whose server was
// started and snapshotted at build time, to the first 200 through the
// preview URL; the baseline is the same from a cold boot of the image
// that starts the server itself. The note gives the ratio of the p50s.
func templateCreateHTTP(ctx context.Context, e *env) (Result, error) {
	if _, err := e.buildBenchTemplate(ctx, serverDockerfile, templateServerPort); err != nil {
		return Result{}, err
	}
	defer e.dropBenchTemplate(ctx)
	warm, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		return e.timeFirst200(ctx, api.CreateRequest{Template: benchTemplate, Name: sandboxName}, nil)
	})
	if err != nil {
		return Result{}, err
	}
	serve := []string{"sh", "-c", "mkdir -p /tmp/srv && cd /tmp/srv && echo hello > index.html && exec python3 -m http.server 8000 --bind 127.0.0.1"}
	cold, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		return e.timeFirst200(ctx, api.CreateRequest{Image: e.opts.Image, Name: sandboxName}, serve)
	})
	res := latencyResult(warm)
	if err != nil {
		return res, err
	}
	base := latencyResult(cold)
	base.Name, base.Title = "cold-boot-http", "cold boot + server start → first 200"
	res.Baselines = append(res.Baselines, base)
	if res.Latency.P50 > 0 {
		res.Note = fmt.Sprintf("a cold boot of %s that starts the server takes %.1f× as long (p50 %s vs %s)",
			e.opts.Image, float64(base.Latency.P50)/float64(res.Latency.P50), base.Latency.P50.Round(time.Millisecond), res.Latency.P50.Round(time.Millisecond))
	}
	return res, nil
}

// timeFirst200 creates a sandbox as req asks, starts serve in it (nil:
// its template's server already runs), exposes the server's port and
// polls its preview URL: the time from the create to the first 200.
func (e *env) timeFirst200(ctx context.Context, req api.CreateRequest, serve []string) (time.Duration, error) {
	start := time.Now()
	id, err := e.createWith(ctx, req)
	if err != nil {
		return 0, err
	}
	defer e.stops.stop(ctx, id)
	if serve != nil {
		if _, err := e.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: serve}); err != nil {
			return 0, err
		}
	}
	info, err := e.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: templateServerPort})
	if err != nil {
		return 0, err
	}
	url := e.c.URL() + info.URL
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.previewGet(ctx, url)
		if err == nil {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("no 200 through the preview URL within 30 s: %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// templateDisk measures how much the daemon's data directory grows for
// each more sandbox of a template (after its first, which may unpack the
// template's files): Runs sandboxes, each measured once it answers.
func templateDisk(ctx context.Context, e *env) (Result, error) {
	if e.opts.DataDir == "" {
		return Result{}, skipf("the daemon's data directory is not known (--data-dir)")
	}
	if _, err := os.Stat(e.opts.DataDir); err != nil {
		return Result{}, skipf("the daemon's data directory is not on this host: %v", err)
	}
	if _, err := e.buildBenchTemplate(ctx, serverDockerfile, templateServerPort); err != nil {
		return Result{}, err
	}
	defer e.dropBenchTemplate(ctx)
	req := api.CreateRequest{Template: benchTemplate, Name: sandboxName}
	var ids []string
	defer func() { e.stopSandboxes(ctx, ids) }()
	id, err := e.createWith(ctx, req)
	if err != nil {
		return Result{}, err
	}
	ids = append(ids, id)
	var sizes []uint64
	before := DataDirBytes(e.opts.DataDir)
	for range e.opts.Runs {
		id, err := e.createWith(ctx, req)
		if err != nil {
			return Result{}, err
		}
		ids = append(ids, id)
		if _, err := e.exec(ctx, id, "true"); err != nil {
			return Result{}, err
		}
		now := DataDirBytes(e.opts.DataDir)
		sizes = append(sizes, uint64(max(now-before, 0)))
		before = now
	}
	s := SummarizeSizes(sizes)
	return Result{Memory: &s, Note: "the data directory's growth (allocated blocks) per more sandbox of a template whose server runs"}, nil
}

// DataDirBytes is the disk the files under dir take, by allocated blocks
// (a sparse file counts what it holds), each file once: mounts under it
// (a sandbox's root, its image) are not walked, and files a process keeps
// open after unlinking them there (runsc's writable-layer file) count.
func DataDirBytes(dir string) int64 {
	dir = filepath.Clean(dir)
	mounts := map[string]bool{}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
				mounts[f[4]] = true
			}
		}
	}
	seen := map[[2]uint64]bool{}
	var n int64
	count := func(st *syscall.Stat_t) {
		if k := [2]uint64{st.Dev, st.Ino}; !seen[k] {
			seen[k] = true
			n += st.Blocks * 512
		}
	}
	_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if mounts[p] {
			return filepath.SkipDir
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			count(&st)
		}
		return nil
	})
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && strings.HasPrefix(target, dir+"/") && strings.HasSuffix(target, " (deleted)") {
			var st syscall.Stat_t
			if syscall.Stat(fd, &st) == nil {
				count(&st)
			}
		}
	}
	return n
}
