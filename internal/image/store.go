package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// defaultBuildTimeout bounds one preset build, including the wait for
// another process building the same image.
const defaultBuildTimeout = 15 * time.Minute

// preset is a catalog image built from a recipe.
type preset struct {
	recipe recipe
	id     string
	ref    string
}

// Store finds, builds and caches images. It is safe for concurrent use.
type Store struct {
	cache        cache
	log          *slog.Logger
	names        []string // preset names in catalog order
	presets      map[string]preset
	customNames  []string // custom image names, sorted
	custom       map[string]customImage
	host         v1.Platform // what custom images are pulled for
	build        builder
	buildTimeout time.Duration
	maxUnpacked  int64 // bytes one pulled image may unpack to

	// buildCtx parents every build: builds outlive the callers that start
	// them and end with Close.
	buildCtx    context.Context
	cancelBuild context.CancelFunc
	builds      sync.WaitGroup

	// mu guards the fields below.
	mu      sync.Mutex
	ready   map[string]*Image  // name → published image
	flights map[string]*flight // name → its build in progress
	closed  bool               // no build starts once set
}

// job builds or pulls one image and publishes it to the cache.
type job func(ctx context.Context, f *flight) (*Image, error)

// flight is one build in progress, shared by every Ensure waiting for it.
type flight struct {
	kind    string // of the image: KindPreset builds, KindCustom pulls
	started time.Time
	done    chan struct{} // closed when img or err is set

	img *Image
	err *errdefs.Error

	// detailMu guards detail.
	detailMu sync.Mutex
	detail   string // latest progress line
}

func (f *flight) setDetail(line string) {
	f.detailMu.Lock()
	f.detail = line
	f.detailMu.Unlock()
}

func (f *flight) latestDetail() string {
	f.detailMu.Lock()
	defer f.detailMu.Unlock()
	return f.detail
}

// NewStore opens the image cache at opts.CacheDir, creating it if needed,
// and removes the half-built leftovers of interrupted builds.
func NewStore(opts Options) (*Store, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("opening image store: cache dir is required")
	}
	dir, err := filepath.Abs(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("opening image store: %w", err)
	}
	opts = opts.withDefaults()
	buildCtx, cancel := context.WithCancel(context.Background())
	s := &Store{
		cache:        cache{dir: dir},
		log:          opts.Logger.With("component", "image"),
		presets:      map[string]preset{},
		custom:       map[string]customImage{},
		host:         hostPlatform(),
		build:        mmdebstrapBuilder(opts.Mirror),
		buildTimeout: defaultBuildTimeout,
		maxUnpacked:  opts.MaxUnpackedBytes,
		buildCtx:     buildCtx,
		cancelBuild:  cancel,
		ready:        map[string]*Image{},
		flights:      map[string]*flight{},
	}
	for _, p := range presetPackages {
		r := presetRecipe(opts.Suite, p.packages)
		r.Customize = p.customize
		if p.config != nil {
			r.Config = *p.config
		}
		s.names = append(s.names, p.name)
		s.presets[p.name] = preset{recipe: r, id: r.id(), ref: r.ref()}
	}
	if err := s.addCustom(opts.CustomImages); err != nil {
		cancel()
		return nil, fmt.Errorf("opening image store: %w", err)
	}
	if err := s.cache.open(); err != nil {
		cancel()
		return nil, fmt.Errorf("opening image store: %w", err)
	}
	if err := s.cache.removeLeftovers(s.log); err != nil {
		cancel()
		return nil, fmt.Errorf("opening image store: %w", err)
	}
	s.cache.removeRefLeftovers()
	s.log.Debug("image store open", "dir", dir, "suite", opts.Suite, "mirror", opts.Mirror)
	return s, nil
}

// Close stops the builds in progress, removing their partial work, and
// waits for them to end. Their callers get S102. Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancelBuild()
	s.builds.Wait()
	return nil
}

// Presets returns the names of the built-in images, in catalog order.
func (s *Store) Presets() []string {
	return append([]string(nil), s.names...)
}

// Ensure returns the image name, building it first when it is not cached
// and install is true. Concurrent calls for one image share one build; the
// build runs on (bounded by its own timeout, until Close) even if ctx ends:
// only this call's wait is abandoned.
//
// Errors: S100 for a name outside the catalog, S101 when the image is not
// cached and install is false, S102 (retryable) when the build or pull fails.
func (s *Store) Ensure(ctx context.Context, name string, install bool) (*Image, error) {
	j, err := s.jobFor(name)
	if err != nil {
		return nil, err
	}
	if img, ok := s.Lookup(name); ok {
		return img, nil
	}
	if !install {
		return nil, errdefs.New(errdefs.CodeImageMissing,
			"image %s is not cached on this host and auto_install is false; pre-pull it with `hutch image pull %s`", name, name).
			WithFix(map[string]any{"command": "hutch image pull " + name}, "run `hutch image pull "+name+"` against this daemon, or enable auto_install")
	}
	return s.await(ctx, name, j, true)
}

// await starts (or joins) the flight of image name and waits for it until
// ctx ends. With reuse, an image that became ready meanwhile is taken as
// it is; without, j runs anyway (a pull that resolves the reference again).
func (s *Store) await(ctx context.Context, name string, j job, reuse bool) (*Image, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ensuring image %s: %w", name, context.Cause(ctx))
	}
	f := s.start(name, j, reuse)
	select {
	case <-f.done:
		if f.err != nil {
			e := *f.err // each caller gets its own, free to annotate
			return nil, &e
		}
		return f.img.clone(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for image %s: %w", name, context.Cause(ctx))
	}
}

// start returns the flight building or pulling name, starting one with j
// if there is none (and, with reuse, name is not ready).
func (s *Store) start(name string, j job, reuse bool) *flight {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.flights[name]; ok {
		return f
	}
	f := &flight{kind: s.kindOf(name), started: time.Now(), done: make(chan struct{})}
	switch img, ok := s.ready[name]; {
	case ok && reuse: // finished since the caller's Lookup
		f.img = img
		close(f.done)
		return f
	case s.closed:
		f.err = errdefs.New(errdefs.CodeImagePull, "building image %s: the image store is closed", name)
		close(f.done)
		return f
	}
	s.flights[name] = f
	s.builds.Add(1)
	go s.fly(name, j, f)
	return f
}

// fly runs f to the end and publishes its result.
func (s *Store) fly(name string, j job, f *flight) {
	defer s.builds.Done()
	ctx, cancel := context.WithTimeout(s.buildCtx, s.buildTimeout)
	defer cancel()
	img, err := j(ctx, f)
	s.mu.Lock()
	delete(s.flights, name)
	if err == nil {
		s.ready[name] = img
		f.img = img
	} else {
		f.err = errdefs.As(err)
	}
	s.mu.Unlock()
	close(f.done)
}

// buildPreset builds and publishes preset name, unless another process
// published it meanwhile. Errors are S102.
func (s *Store) buildPreset(ctx context.Context, name string, p preset, f *flight) (*Image, error) {
	log := s.log.With("image", name, "id", p.id[:12])
	fail := func(err error) (*Image, error) {
		log.Error("image build failed", "err", err, "elapsed", time.Since(f.started).Round(time.Millisecond))
		return nil, errdefs.Wrap(errdefs.CodeImagePull, err, "building image "+name)
	}
	unlock, err := s.cache.lock(ctx, p.id, log)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if img, err := s.cache.load(p.id); err == nil {
		img.Name = name
		return img, nil
	}

	log.Info("building image", "ref", p.ref)
	img, err := s.cache.create(Image{Name: name, Kind: KindPreset, Ref: p.ref, ID: p.id, Config: p.recipe.Config},
		func(rootfs string) error { return s.build(ctx, p.recipe, rootfs, f.setDetail) })
	if err != nil {
		return fail(err)
	}
	log.Info("image built", "elapsed", time.Since(f.started).Round(time.Millisecond),
		"size_mb", img.SizeBytes>>20, "rootfs", img.Rootfs)
	return img, nil
}

// Lookup returns the image name if it is cached and ready. It never builds
// or pulls; after the first hit it answers from memory.
func (s *Store) Lookup(name string) (*Image, bool) {
	s.mu.Lock()
	img, ok := s.ready[name]
	s.mu.Unlock()
	if ok {
		return img.clone(), true
	}
	// Not seen yet by this store: published earlier, or by another process.
	var id string
	if p, ok := s.presets[name]; ok {
		id = p.id
	} else if c, ok := s.custom[name]; ok {
		var err error
		if id, err = s.cache.loadRef(c.ref, s.host); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("ignoring invalid image reference cache entry", "image", name, "err", err)
			}
			return nil, false
		}
	} else {
		return nil, false
	}
	img, err := s.cache.load(id)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("ignoring invalid image cache entry", "image", name, "err", err)
		}
		return nil, false
	}
	img.Name = name
	s.mu.Lock()
	s.ready[name] = img
	s.mu.Unlock()
	return img.clone(), true
}

// Status reports the cache state of image name: missing, building (with
// the elapsed time and latest progress line) or ready.
func (s *Store) Status(name string) api.ImageStatus {
	st := api.ImageStatus{Name: name, State: StateMissing}
	s.mu.Lock()
	f := s.flights[name]
	s.mu.Unlock()
	if f != nil {
		st.State = StateBuilding
		if f.kind == KindCustom {
			st.State = StatePulling
		}
		st.ElapsedSecs = time.Since(f.started).Seconds()
		st.Detail = f.latestDetail()
		return st
	}
	if img, ok := s.Lookup(name); ok {
		st.State = StateReady
		st.SizeBytes = img.SizeBytes
		st.ID = img.ID
	}
	return st
}
