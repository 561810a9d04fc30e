package bench

// Baselines: the scenarios' measurements made with other tools in the same
// run, on the same machine, so that a noisy machine affects both sides.
// Docker runs through its Engine API with the daemon's own Debian root
// filesystem imported as an image (`docker import`), idle containers with
// an hutch sandbox's default limits and no network; `runsc do` is gVisor
// without hutch around it. A baseline whose tool is not on the host is
// skipped, never failed: neither is a dependency of hutch.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image"
)

// Baseline names.
const (
	baselineDocker  = "docker"
	baselineRunscDo = "runsc-do"
)

// baseline measures a scenario's counterpart with another tool.
type baseline struct {
	name, title string
	run         func(ctx context.Context, e *env) (Result, error)
}

// dockerEnv is Docker as a run found it: the client and the imported
// image, or why Docker baselines are skipped. It is set up by the first
// Docker baseline.
type dockerEnv struct {
	setUp   bool
	missing string // why Docker is not measured; "" when it is
	c       *dockerClient
	version string
	spec    containerSpec
	// removals are the containers being removed in the background.
	removals sync.WaitGroup
	slots    chan struct{}
}

// ready sets Docker up once (off every clock) and returns a skipError
// when it is not available.
func (e *env) dockerReady(ctx context.Context) error {
	d := &e.docker
	if !d.setUp {
		d.setUp = true
		if err := e.setUpDocker(ctx); err != nil {
			d.missing = err.Error()
			if d.c != nil {
				d.c.close()
				d.c = nil
			}
		}
	}
	if d.missing != "" {
		return skipf("%s", d.missing)
	}
	return nil
}

// setUpDocker connects to the Engine and imports the benchmark image's
// root filesystem from the daemon's image cache, unless an earlier run
// did (the image is tagged with the hutch image id).
func (e *env) setUpDocker(ctx context.Context) error {
	sock := e.opts.DockerSocket
	if sock == "" {
		return errors.New("the Docker baselines are off (--docker \"\")")
	}
	if _, err := os.Stat(sock); err != nil {
		return fmt.Errorf("no Docker Engine socket at %s", sock)
	}
	d := &e.docker
	d.c = newDockerClient(sock)
	d.slots = make(chan struct{}, maxPendingStops)
	var err error
	if d.version, err = d.c.version(ctx); err != nil {
		return fmt.Errorf("the Docker Engine at %s does not answer: %v", sock, err)
	}
	if e.opts.ImageCache == "" {
		return errors.New("no --image-cache given: the root filesystem to import into Docker is unknown")
	}
	images, err := e.c.Images(ctx)
	if err != nil {
		return fmt.Errorf("listing the daemon's images: %w", err)
	}
	i := slices.IndexFunc(images.Images, func(im api.ImageInfo) bool { return im.Name == e.opts.Image })
	if i < 0 || images.Images[i].ID == "" {
		return fmt.Errorf("the daemon has no %s image ready to import into Docker", e.opts.Image)
	}
	id := images.Images[i].ID
	img, err := image.LoadCached(e.opts.ImageCache, id)
	if err != nil {
		return fmt.Errorf("reading the %s image's config (is --image-cache the daemon's image_cache_dir?): %w", e.opts.Image, err)
	}
	repo, tag := "hutch-bench/"+e.opts.Image, id[:12]
	ref := repo + ":" + tag
	ok, err := d.c.imageExists(ctx, ref)
	if err != nil {
		return err
	}
	if !ok {
		e.progress("bench: importing the %s root filesystem into Docker as %s…", e.opts.Image, ref)
		if err := d.c.importRootfs(ctx, img.Rootfs, repo, tag); err != nil {
			return err
		}
	}
	cpus, mem := uint32(1), uint32(512)
	if e.defaults != nil {
		cpus, mem = e.defaults.CPUs, e.defaults.MemoryMB
	}
	d.spec = containerSpec{Image: ref, Cmd: []string{"sleep", "infinity"}, Env: img.Config.Env, CPUs: cpus, MemoryMB: mem, Pids: 1024}
	return nil
}

// startContainer creates and starts a container of the benchmark image.
func (e *env) startContainer(ctx context.Context) (string, error) {
	id, err := e.docker.c.create(ctx, e.docker.spec)
	if err != nil {
		return "", err
	}
	if err := e.docker.c.start(ctx, id); err != nil {
		e.removeContainer(ctx, id)
		return "", err
	}
	return id, nil
}

// removeContainer removes container id in the background, with at most
// maxPendingStops removals under way, as hutch sandboxes are stopped.
func (e *env) removeContainer(ctx context.Context, id string) {
	d := &e.docker
	d.slots <- struct{}{}
	d.removals.Go(func() {
		defer func() { <-d.slots }()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		_ = d.c.remove(rctx, id)
	})
}

// startContainers starts n containers, running after in each, and
// returns their ids, also when it fails midway: the caller removes them
// (removeContainers).
func (e *env) startContainers(ctx context.Context, n int, after func(id string) error) ([]string, error) {
	if err := e.dockerReady(ctx); err != nil {
		return nil, err
	}
	return makeN(n, func() (string, error) { return e.startContainer(ctx) }, after)
}

// removeContainers removes containers in the background.
func (e *env) removeContainers(ctx context.Context, ids []string) {
	for _, id := range ids {
		e.removeContainer(ctx, id)
	}
}

// withContainer runs fn with one running container (set up off the clock).
func (e *env) withContainer(ctx context.Context, fn func(id string) error) error {
	if err := e.dockerReady(ctx); err != nil {
		return err
	}
	id, err := e.startContainer(ctx)
	if err != nil {
		return err
	}
	defer e.removeContainer(ctx, id)
	return fn(id)
}

// dockerRun runs argv in container id and fails unless it exits 0.
func (e *env) dockerRun(ctx context.Context, id string, argv ...string) ([]byte, error) {
	out, stderr, code, err := e.docker.c.exec(ctx, id, argv...)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("docker exec %s: exited with status %d: %s", argv[0], code, clip(string(stderr), 300))
	}
	return out, nil
}

// dockerCreate is coldCreate with Docker: create and start, and with
// firstExec an exec of true.
func dockerCreate(firstExec bool) baseline {
	title := "docker: create+start"
	if firstExec {
		title += "+exec true"
	}
	return baseline{name: baselineDocker, title: title, run: func(ctx context.Context, e *env) (Result, error) {
		if err := e.dockerReady(ctx); err != nil {
			return Result{}, err
		}
		samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			id, err := e.startContainer(ctx)
			if err != nil {
				return 0, err
			}
			defer e.removeContainer(ctx, id)
			if firstExec {
				if _, err := e.dockerRun(ctx, id, "true"); err != nil {
					return 0, err
				}
			}
			return time.Since(start), nil
		})
		return latencyResult(samples), err
	}}
}

// dockerExec is execLatency with `docker exec` in one container.
func dockerExec(argv ...string) baseline {
	return baseline{name: baselineDocker, title: "docker: exec " + strings.Join(argv, " "), run: func(ctx context.Context, e *env) (Result, error) {
		var samples []time.Duration
		err := e.withContainer(ctx, func(id string) error {
			var err error
			samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
				start := time.Now()
				if _, err := e.dockerRun(ctx, id, argv...); err != nil {
					return 0, err
				}
				return time.Since(start), nil
			})
			return err
		})
		return latencyResult(samples), err
	}}
}

// dockerSpawnFloor is spawnFloor in a runc container: what starting a
// process costs there (about the host's cost).
var dockerSpawnFloor = baseline{name: baselineDocker, title: "docker: spawn floor (posix_spawn in container)", run: func(ctx context.Context, e *env) (Result, error) {
	var samples []time.Duration
	err := e.withContainer(ctx, func(id string) error {
		out, err := e.dockerRun(ctx, id, spawnArgv(e.opts.Runs, e.opts.Warmup)...)
		if err != nil {
			return err
		}
		samples, err = parseSeconds(string(out), e.opts.Runs)
		return err
	})
	return latencyResult(samples), err
}}

// dockerThroughput is execThroughput with `docker exec`.
var dockerThroughput = baseline{name: baselineDocker, title: "docker: exec true", run: func(ctx context.Context, e *env) (Result, error) {
	ids, err := e.startContainers(ctx, e.opts.Sandboxes, nil)
	defer e.removeContainers(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	return throughput(ctx, e.opts, ids, func(ctx context.Context, id string) error {
		_, err := e.dockerRun(ctx, id, "true")
		return err
	})
}}

// runscDo is coldCreate(true) with gVisor alone: `runsc do true` boots a
// sandbox over the host's root filesystem, runs true in it and tears it
// down, on the platform and network hutch uses.
var runscDo = baseline{name: baselineRunscDo, title: "runsc do true (boot, run, exit)", run: func(ctx context.Context, e *env) (Result, error) {
	runsc := e.opts.RunscPath
	if runsc == "" {
		return Result{}, skipf("no runsc binary known (it is looked for next to hutch)")
	}
	if fi, err := os.Stat(runsc); err != nil || !fi.Mode().IsRegular() {
		return Result{}, skipf("no runsc binary at %s", runsc)
	}
	if os.Geteuid() != 0 {
		return Result{}, skipf("runsc do needs root")
	}
	root, err := os.MkdirTemp("", "hutch-bench-runsc-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(root)
	samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, runsc, "--root", root, "--platform=systrap", "--network=none", "do", "true")
		cmd.Dir = root
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("runsc do true: %w: %s", err, clip(string(out), 300))
		}
		return d, nil
	})
	return latencyResult(samples), err
}}
