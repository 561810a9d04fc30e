package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/net/netutil"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/engineapi"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	_ "github.com/hutch-dev/hutch/internal/runtime/runtimes" // register backends
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// shutdownTimeout bounds the ordered shutdown after the context ends.
const shutdownTimeout = 10 * time.Second

// Run starts the daemon and serves until ctx ends, then shuts down in
// order: stop accepting requests, stop every sandbox, close the store.
// Cancellation is a normal stop and returns nil.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	cfg := config.Default()
	if opts.ConfigPath != "" {
		var err error
		if cfg, err = config.Load(opts.ConfigPath); err != nil {
			return err
		}
	}
	if opts.DataDir == "" {
		opts.DataDir = DefaultDataDir
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if err := checkExposure(opts, cfg); err != nil {
		return err
	}
	guard, err := webGuard(cfg, opts.Listen, opts.EngineListen)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	unlock, err := lockDataDir(opts.DataDir, log)
	if err != nil {
		return err
	}
	defer unlock()
	warnDiskBudget(log, opts.DataDir, cfg)
	obs, err := startObservability(ctx, log)
	if err != nil {
		return err
	}
	defer obs.close()
	tokens, err := auth.New(cfg.APITokens)
	if err != nil {
		return err
	}
	runscPath, err := findBinary(opts.RunscPath, "runsc")
	if err != nil {
		return err
	}
	agentPath, err := findBinary(opts.AgentPath, "hutch-agent")
	if err != nil {
		return err
	}
	cacheDir := cfg.ImageCacheDir
	if cacheDir == "" {
		cacheDir = filepath.Join(opts.DataDir, "images")
	}
	images, err := image.NewStore(image.Options{CacheDir: cacheDir, Logger: log, CustomImages: cfg.CustomImages,
		MaxUnpackedBytes: int64(cfg.MaxImageUnpackedMB) << 20})
	if err != nil {
		return err
	}
	defer images.Close()
	rtOpts := runtime.Options{
		StateDir:             filepath.Join(opts.DataDir, cfg.Runtime),
		BinaryPath:           runscPath,
		NetworkPool:          cfg.NetworkPool,
		SystrapFastPathOff:   cfg.SystrapFastPath == config.FastPathOff,
		BlockPrivateNetworks: cfg.BlockPrivateNetworks,
	}
	rt, err := runtime.New(cfg.Runtime, rtOpts)
	if err != nil {
		return fmt.Errorf("starting runtime %s: %w", cfg.Runtime, err)
	}
	if c, ok := rt.(io.Closer); ok {
		defer c.Close()
	}
	// cleanShutdown tells the watchdog that every sandbox was stopped.
	cleanShutdown := false
	if cfg.CrashWatchdog {
		wd, err := startWatchdog(watchdogJob{Runtime: cfg.Runtime, Options: rtOpts, LockPath: dataDirLock(opts.DataDir)}, log)
		if err != nil {
			return err
		}
		defer func() { wd.stop(cleanShutdown) }()
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	mgr, err := sandbox.New(ctx, sandbox.Options{
		Config:    cfg,
		Runtime:   rt,
		Images:    images,
		AgentPath: agentPath,
		StateDir:  opts.DataDir,
		Logger:    log,
		Observer:  obs.metrics,
	})
	if err != nil {
		ln.Close()
		return err
	}
	mgr.ProtectPorts(listenPorts(ln.Addr().String(), opts.EngineListen)...)
	table := functions.New(functions.Deps{Sandboxes: mgr, Files: mgr, Images: mgr, Metrics: mgr, Observer: obs.metrics})
	obs.attach(mgr.Live, images.CacheBytes)
	obs.metrics.WatchWarmPool(mgr.WarmPool)
	read, write, idle := cfg.HTTPTimeouts()
	srv := httpapi.NewServer(table, httpapi.Options{Logger: log, Auth: tokens, Metrics: obs.handler(), Guard: guard,
		ReadTimeout: read, WriteTimeout: write, IdleTimeout: idle})
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	ln = netutil.LimitListener(ln, cfg.MaxConnections)
	serveErr := make(chan error, 2)
	eng, err := startEngine(opts.EngineListen, cfg.MaxConnections, table, engineapi.Options{Logger: log, Auth: tokens, Guard: guard,
		ReadTimeout: read, WriteTimeout: write, IdleTimeout: idle,
		SessionsPerOwner:           cfg.EngineSessionsPerOwner,
		ChannelBufferBytes:         cfg.ChannelBufferMB << 20,
		ChannelBufferPerOwnerBytes: cfg.ChannelBufferPerOwnerMB << 20,
	}, serveErr)
	if err != nil {
		ln.Close()
		return errors.Join(err, mgr.Close(context.Background()))
	}
	mgr.ProtectPorts(listenPorts(eng.addr())...)
	prof, err := startProfiler(opts.PprofListen, serveErr)
	if err != nil {
		ln.Close()
		return errors.Join(err, eng.shutdown(context.Background()), mgr.Close(context.Background()))
	}
	defer prof.close()
	mgr.ProtectPorts(listenPorts(prof.addr())...)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("hutch serving", "listen", ln.Addr().String(), "engine_listen", eng.addr(), "data_dir", opts.DataDir,
		"runtime", rt.Name(), "runsc", runscPath, "agent", agentPath, "image_cache", cacheDir, "pprof", prof.addr())
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-serveErr:
		log.Error("server stopped", "err", err)
	}
	// Stop accepting requests and stop every sandbox at once: requests
	// still in flight (a long exec) end when their sandbox does.
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(shutCtx) }()
	engDone := make(chan error, 1)
	go func() { engDone <- eng.shutdown(shutCtx) }()
	mgrErr := mgr.Close(shutCtx)
	cleanShutdown = mgrErr == nil
	return errors.Join(ignoreClosed(err), ignoreClosed(<-httpDone), <-engDone, mgrErr)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// findBinary resolves a helper binary: the explicit path if given, else
// next to the running executable, else on PATH.
func findBinary(explicit, name string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return filepath.Abs(explicit)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("%s not found next to the hutch binary or on PATH (build it with `make build`, or pass --%s-path)", name, flagName(name))
}

func flagName(bin string) string {
	if bin == "hutch-agent" {
		return "agent"
	}
	return bin
}
