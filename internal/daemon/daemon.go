package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/net/netutil"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/console"
	"github.com/hutch-dev/hutch/internal/dnsgate"
	"github.com/hutch-dev/hutch/internal/engineapi"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/jobs"
	"github.com/hutch-dev/hutch/internal/mcpserver"
	"github.com/hutch-dev/hutch/internal/metrics"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/webhooks"
)

// shutdownTimeout bounds the ordered shutdown after the context ends.
const shutdownTimeout = 10 * time.Second

// Run starts the daemon and serves until ctx ends, then shuts down in
// order: stop accepting requests, stop every sandbox, close the store.
// Cancellation is a normal stop and returns nil.
func Run(ctx context.Context, opts Options) (err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	cfg := config.Default()
	if opts.ConfigPath != "" {
		if cfg, err = config.Load(opts.ConfigPath); err != nil {
			return err
		}
	}
	for _, w := range cfg.Deprecated {
		log.Warn("config: " + w)
	}
	applyRuntimeFlags(opts, &cfg)
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
	// held is what the daemon holds for its whole life, released in
	// reverse on every return.
	var held cleanup.Stack
	defer func() {
		if err := held.Run(ctx); err != nil {
			log.Warn("releasing the daemon's resources", "err", err)
		}
	}()
	unlock, err := lockDataDir(opts.DataDir, log)
	if err != nil {
		return err
	}
	held.Push("unlocking the data dir", func(context.Context) error { unlock(); return nil })
	warnDiskBudget(log, opts.DataDir, cfg)
	obs, err := startObservability(ctx, log)
	if err != nil {
		return err
	}
	held.Push("flushing traces", func(context.Context) error { obs.close(); return nil })
	tokens, err := auth.New(cfg.APITokens)
	if err != nil {
		return err
	}
	agentPath, err := runtime.FindBinary(opts.AgentPath, "hutch-agent")
	if errors.Is(err, runtime.ErrBinaryNotFound) {
		err = fmt.Errorf("%w (build it with `make build`, or pass --agent-path)", err)
	}
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
	held.Push("closing the image store", func(context.Context) error { return images.Close() })
	resolver, err := dnsgate.Listen("127.0.0.1", dnsgate.Options{Nameservers: nameservers(cfg), Logger: log})
	if err != nil {
		return err
	}
	held.Push("stopping the sandboxes' resolver", func(context.Context) error { return resolver.Close() })
	rts, rtOpts, err := startRuntimes(cfg, opts.DataDir, resolver.Addr().String(), log)
	if err != nil {
		return err
	}
	held.Push("closing the runtimes", func(context.Context) error { return closeRuntimes(rts.All()) })
	// cleanShutdown tells the watchdog that every sandbox was stopped.
	cleanShutdown := false
	if cfg.CrashWatchdog {
		wd, err := startWatchdog(watchdogJob{Runtimes: rtOpts, LockPath: dataDirLock(opts.DataDir)}, log)
		if err != nil {
			return err
		}
		held.Push("stopping the crash watchdog", func(context.Context) error { wd.stop(cleanShutdown); return nil })
	}
	// undo is what a start that fails half-way must undo; once serving,
	// the ordered shutdown below takes over.
	var undo cleanup.Stack
	defer undo.RunUnless(ctx, &err)
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	undo.Push("closing the API listener", func(context.Context) error { return ignoreNetClosed(ln.Close()) })
	evlog, err := events.Open(filepath.Join(opts.DataDir, "events.db"), events.Options{
		MaxCount: cfg.EventsMaxCount, MaxAge: time.Duration(cfg.EventsMaxAgeSecs) * time.Second, Logger: log})
	if err != nil {
		return err
	}
	held.Push("closing the event log", func(context.Context) error { return evlog.Close() })
	hooks := webhooks.Start(evlog, hooksOf(cfg.Webhooks), webhooks.Options{Logger: log})
	held.Push("stopping the webhooks", func(context.Context) error { hooks.Close(); return nil })
	hookAdmin, err := startAddedWebhooks(&cfg, hooks, filepath.Join(opts.DataDir, "webhooks.json"), log)
	if err != nil {
		return err
	}
	vols, err := openVolumes(cfg, opts.DataDir, log)
	if err != nil {
		return err
	}
	// Released after the manager's Close: no sandbox mounts a volume then.
	held.Push("unmounting the volumes", func(context.Context) error { return vols.Close() })
	mgr, err := sandbox.New(ctx, sandbox.Options{
		Volumes:   vols,
		Config:    cfg,
		Runtimes:  rts,
		Images:    images,
		AgentPath: agentPath,
		StateDir:  opts.DataDir,
		Logger:    log,
		Observer:  obs.metrics,
		Events:    evlog,
		// A host URL names the port the listener got (--listen :0 too).
		ListenPort: ln.Addr().(*net.TCPAddr).Port,
	})
	if err != nil {
		return err
	}
	undo.Push("closing the sandbox manager", mgr.Close)
	resolver.SetDirectory(mgr.Resolver())
	jobRunner, err := jobs.Open(filepath.Join(opts.DataDir, "jobs.db"), mgr, jobs.Options{MaxRunning: cfg.JobsMaxRunning,
		MaxRunningPerOwner: cfg.JobsMaxRunningPerOwner, MaxQueuedPerOwner: cfg.MaxQueuedJobsPerOwner, MaxKept: cfg.JobsMaxKept, Events: evlog, Logger: log})
	if err != nil {
		return err
	}
	undo.Push("closing the job runner", func(context.Context) error { return jobRunner.Close() })
	mgr.ProtectPorts(listenPorts(ln.Addr().String(), opts.EngineListen)...)
	table := functions.New(functions.Deps{Sandboxes: mgr, Files: mgr, Images: mgr, Metrics: mgr, Processes: mgr, Lifecycle: mgr, Snapshots: mgr, Events: mgr, Webhooks: hookAdmin, Alerts: mgr, Jobs: jobRunner, Interpreter: mgr, Ports: mgr, Networks: mgr, Environment: mgr, Volumes: mgr, Git: mgr, Observer: obs.metrics})
	obs.attach(mgr.Live, images.CacheBytes)
	obs.metrics.SetDaemon(metrics.Daemon{Runtimes: runtimeMetrics(rts), Capacity: cfg.MaxConcurrentSandboxes})
	obs.metrics.WatchWarmPool(mgr.WarmPool)
	obs.metrics.WatchWebhooks(hooks.Stats)
	read, write, idle := cfg.HTTPTimeouts()
	mcpHandler := mcpserver.HTTPHandler(table, mcpserver.Options{DefaultImage: cfg.MCPDefaultImage, Logger: log})
	e2b, err := e2bTransport(cfg, opts.DataDir, table, guard, write, log)
	if err != nil {
		return err
	}
	srv := httpapi.NewServer(table, httpapi.Options{Logger: log, Auth: tokens, Runtimes: rts.Infos(), Metrics: obs.handler(), MCP: mcpHandler, Ports: previewPorts{mgr}, PreviewDomain: cfg.PreviewDomain, Guard: guard,
		Console: console.Handler(), Front: e2b.Wrap, ReadTimeout: read, WriteTimeout: write, IdleTimeout: idle})
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
		return err
	}
	undo.Push("stopping the engine WebSocket", eng.shutdown)
	mgr.ProtectPorts(listenPorts(eng.addr())...)
	prof, err := startProfiler(opts.PprofListen, serveErr)
	if err != nil {
		return err
	}
	held.Push("stopping the profiler", func(context.Context) error { return prof.close() })
	mgr.ProtectPorts(listenPorts(prof.addr())...)
	undo.Release()
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("hutch serving", "listen", ln.Addr().String(), "engine_listen", eng.addr(), "data_dir", opts.DataDir,
		"runtimes", rts.Names(), "default_runtime", cfg.DefaultRuntime, "agent", agentPath, "image_cache", cacheDir, "pprof", prof.addr())
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
	// Running jobs go back to the queue before their sandboxes stop.
	jobErr := jobRunner.Close()
	mgrErr := mgr.Close(shutCtx)
	cleanShutdown = mgrErr == nil
	return errors.Join(ignoreClosed(err), ignoreClosed(<-httpDone), <-engDone, jobErr, mgrErr)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ignoreNetClosed drops the error of closing a listener that is closed
// already.
func ignoreNetClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
