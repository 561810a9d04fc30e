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
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/budget"
	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/clusterapi"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/console"
	"github.com/hutch-dev/hutch/internal/datadir"
	"github.com/hutch-dev/hutch/internal/dnsgate"
	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/engineapi"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/jobs"
	"github.com/hutch-dev/hutch/internal/mcpserver"
	"github.com/hutch-dev/hutch/internal/metrics"
	"github.com/hutch-dev/hutch/internal/netsvc"
	"github.com/hutch-dev/hutch/internal/quota"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/alertsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/envsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/eventsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/filesvc"
	"github.com/hutch-dev/hutch/internal/sandbox/gitsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/imagesvc"
	"github.com/hutch-dev/hutch/internal/sandbox/interpsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/metricsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/networksvc"
	"github.com/hutch-dev/hutch/internal/sandbox/portsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/procsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/snapsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
	"github.com/hutch-dev/hutch/internal/secrets"
	"github.com/hutch-dev/hutch/internal/volumes"
	"github.com/hutch-dev/hutch/internal/webguard"
	"github.com/hutch-dev/hutch/internal/webhooks"
)

// shutdownTimeout bounds the ordered shutdown after the context ends.
const shutdownTimeout = 10 * time.Second

// daemon is one `hutch serve` process: what Run's steps build, in the
// order they build it.
type daemon struct {
	opts  Options
	cfg   config.Config
	log   *slog.Logger
	guard *webguard.Policy

	// held is what the daemon holds for its whole life, released in
	// reverse on every return of Run.
	held cleanup.Stack
	// undo is what a start that fails half-way must undo; once serving,
	// the ordered shutdown (waitAndShutdown) takes over.
	undo cleanup.Stack

	ln     net.Listener // the API listener
	engLn  net.Listener // the engine listener, nil without --engine-listen
	sockLn net.Listener // the local socket, nil without --socket
	certs  *certs       // the TLS files, nil without tls
	// reloads applies SIGHUP and `hutch admin reload` (reload.go).
	reloads reloader

	obs       *observability
	tokens    *auth.Tokens
	agentPath string
	cacheDir  string
	images    *image.Store
	resolver  *dnsgate.Server
	rts       *runtime.Set
	net       *netsvc.Service
	// sbnet is the sandboxes' networking over net (networksvc.Net).
	sbnet *networksvc.Net
	// issue 37: proxy is the egress proxy, secrets the owners' secrets
	// (egress.go).
	proxy   *egressproxy.Proxy
	secrets *secrets.Store

	// cleanShutdown tells the watchdog that every sandbox was stopped (but,
	// with reattach, those left to a restarted daemon: issue 35): true
	// until the manager exists (a start that fails before has none).
	cleanShutdown bool

	evlog     *events.Log
	hooks     *webhooks.Dispatcher
	hookAdmin *webhookAdmin
	vols      *volumes.Store

	mgr       *sandbox.Manager
	ports     *portsvc.Service
	jobRunner *jobs.Runner
	table     *functions.Table

	// issue 41: 4, quota takes the reloaded quota block.
	quota *quota.Service
	// issue 36: the cluster API (cluster.api with --kubeconfig), nil off.
	clusterAPI *clusterapi.API

	// bodies is the budget of request bodies and engine payloads in
	// flight (issue 38: 5), shared by the REST API and the engine.
	bodies *budget.Budget

	srv  *http.Server
	eng  engine
	prof profiler
	// serveErr receives the error of a server (API, engine, profiler)
	// that stops serving.
	serveErr chan error
}

// Run starts the daemon and serves until ctx ends, then shuts down in
// order: stop accepting requests, stop every sandbox, close the store.
// Cancellation is a normal stop and returns nil.
func Run(ctx context.Context, opts Options) (err error) {
	d, err := configure(opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := d.held.Run(ctx); err != nil {
			d.log.Warn("releasing the daemon's resources", "err", err)
		}
	}()
	defer d.undo.RunUnless(ctx, &err)
	for _, step := range []func(context.Context) error{
		d.bindListeners,
		d.prepareHost,
		d.bootRuntimes,
		d.openStores,
		d.startManager,
		d.startTransports,
		// issue 35: join a cluster with --kubeconfig.
		d.startCluster,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	d.undo.Release()
	d.watchReloads(ctx)
	d.serve()
	return d.waitAndShutdown(ctx)
}

// configure reads the config and the flags and makes the data dir; it
// holds nothing yet.
func configure(opts Options) (*daemon, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	d := &daemon{log: log, cleanShutdown: true}
	cfg := config.Default()
	if opts.ConfigPath != "" {
		var err error
		if cfg, err = config.Load(opts.ConfigPath); err != nil {
			return nil, err
		}
	}
	for _, w := range cfg.Deprecated {
		log.Warn("config: " + w)
	}
	if err := applyRuntimeFlags(opts, &cfg); err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		opts.DataDir = DefaultDataDir
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if err := checkExposure(opts, cfg); err != nil {
		return nil, err
	}
	if err := checkPlaintext(opts, cfg); err != nil {
		return nil, err
	}
	guard, err := webGuard(cfg, opts.Listen, opts.EngineListen)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	d.opts, d.cfg, d.guard = opts, cfg, guard
	return d, nil
}

// bindListeners binds the API and engine addresses. The listeners come
// first: a start refused for its address ends before anything is
// started (no watchdog takes it for a crash).
func (d *daemon) bindListeners(context.Context) error {
	ln, err := listen(d.opts.Listen, "--listen")
	if err != nil {
		return err
	}
	d.ln = ln
	d.held.Push("closing the API listener", func(context.Context) error { return ignoreNetClosed(d.ln.Close()) })
	if d.opts.EngineListen != "" {
		if d.engLn, err = listen(d.opts.EngineListen, "--engine-listen"); err != nil {
			return err
		}
		d.held.Push("closing the engine listener", func(context.Context) error { return ignoreNetClosed(d.engLn.Close()) })
	}
	if d.opts.Socket != "" {
		if d.sockLn, err = listenSocket(d.opts.Socket, d.opts.SocketGroup, d.log); err != nil {
			return err
		}
		d.held.Push("closing the local socket", func(context.Context) error { return ignoreNetClosed(d.sockLn.Close()) })
	}
	if d.cfg.TLS.Enabled() {
		if d.certs, err = loadCerts(d.cfg.TLS, d.log); err != nil {
			return err
		}
	}
	return nil
}

// prepareHost locks the data dir, starts tracing and metrics, reads the
// API tokens and finds the agent binary.
func (d *daemon) prepareHost(ctx context.Context) error {
	unlock, err := lockDataDir(d.opts.DataDir, d.log)
	if err != nil {
		return err
	}
	d.held.Push("unlocking the data dir", func(context.Context) error { unlock(); return nil })
	// issue 38: the data dir's format, migrated from an older release's.
	if from, err := datadir.Open(d.opts.DataDir, lockFileName); err != nil {
		return err
	} else if from != datadir.Current {
		d.log.Info("migrated the data dir", "dir", d.opts.DataDir, "from_format", from, "to_format", datadir.Current)
	}
	warnDiskBudget(d.log, d.opts.DataDir, d.cfg)
	if d.obs, err = startObservability(ctx, d.log); err != nil {
		return err
	}
	d.held.Push("flushing traces", func(context.Context) error { d.obs.close(); return nil })
	if d.tokens, err = auth.New(d.cfg.APITokens); err != nil {
		return err
	}
	d.tokens = d.tokens.WithLocalOwner(d.cfg.LocalSocketOwner)
	agentPath, err := runtime.FindBinary(d.opts.AgentPath, "hutch-agent")
	if errors.Is(err, runtime.ErrBinaryNotFound) {
		err = fmt.Errorf("%w (build it with `make build`, or pass --agent-path)", err)
	}
	if err != nil {
		return err
	}
	d.agentPath = agentPath
	return nil
}

// bootRuntimes opens the image store, starts the sandboxes' resolver
// and the runtimes, then the crash watchdog that stops their sandboxes
// if this process dies.
func (d *daemon) bootRuntimes(context.Context) error {
	d.cacheDir = d.cfg.ImageCacheDir
	if d.cacheDir == "" {
		d.cacheDir = filepath.Join(d.opts.DataDir, "images")
	}
	var err error
	d.images, err = image.NewStore(image.Options{CacheDir: d.cacheDir, Logger: d.log, CustomImages: d.cfg.CatalogImages(), // issue 39: allowlisted references too
		MaxUnpackedBytes: int64(d.cfg.MaxImageUnpackedMB) << 20})
	if err != nil {
		return err
	}
	d.held.Push("closing the image store", func(context.Context) error { return d.images.Close() })
	d.resolver, err = dnsgate.Listen("127.0.0.1", dnsgate.Options{Logger: d.log})
	if err != nil {
		return err
	}
	d.held.Push("stopping the sandboxes' resolver", func(context.Context) error { return d.resolver.Close() })
	rts, rtOpts, err := startRuntimes(d.cfg, d.opts.DataDir, d.log)
	if err != nil {
		return err
	}
	d.rts = rts
	d.held.Push("closing the runtimes", func(context.Context) error { return closeRuntimes(d.rts.All()) })
	netOpts := networkOptions(d.cfg, d.opts.DataDir, d.resolver.Addr().String())
	if d.net, err = netsvc.New(netOpts); err != nil {
		return err
	}
	// Released after the manager's Close: no sandbox has a network then.
	d.held.Push("removing the sandbox firewall", func(context.Context) error { return d.net.Close() })
	if d.cfg.CrashWatchdog {
		wd, err := startWatchdog(watchdogJob{Runtimes: rtOpts, Network: &netOpts, LockPath: dataDirLock(d.opts.DataDir),
			ReattachGrace: d.reattachGrace() /* issue 35 */}, d.log)
		if err != nil {
			return err
		}
		d.held.Push("stopping the crash watchdog", func(context.Context) error { wd.stop(d.cleanShutdown, d.reattachGrace() > 0 /* issue 35 */); return nil })
	}
	return nil
}

// openStores opens the event log, the webhooks and the volumes.
func (d *daemon) openStores(context.Context) error {
	var err error
	d.evlog, err = events.Open(filepath.Join(d.opts.DataDir, "events.db"), events.Options{
		MaxCount: d.cfg.EventsMaxCount, MaxBytes: int(d.cfg.EventsMaxMB << 20), MaxAge: time.Duration(d.cfg.EventsMaxAgeSecs) * time.Second,
		OwnerMaxCount: d.cfg.EventsMaxCountPerOwner, OwnerMaxBytes: int(d.cfg.EventsMaxMBPerOwner << 20), Logger: d.log})
	if err != nil {
		return err
	}
	d.held.Push("closing the event log", func(context.Context) error { return d.evlog.Close() })
	d.hooks = webhooks.Start(d.evlog, hooksOf(d.cfg.Webhooks), webhooks.Options{Logger: d.log})
	d.held.Push("stopping the webhooks", func(context.Context) error { d.hooks.Close(); return nil })
	if d.hookAdmin, err = startAddedWebhooks(&d.cfg, d.hooks, filepath.Join(d.opts.DataDir, "webhooks.json"), d.log); err != nil {
		return err
	}
	if d.vols, err = openVolumes(d.cfg, d.opts.DataDir, d.log); err != nil {
		return err
	}
	// Released after the manager's Close: no sandbox mounts a volume then.
	d.held.Push("unmounting the volumes", func(context.Context) error { return d.vols.Close() })
	return nil
}

// startManager starts the sandbox manager, the job runner and the
// function table over them.
func (d *daemon) startManager(ctx context.Context) error {
	cfg, obs := d.cfg, d.obs
	// The snapshot service is built over the manager, whose creates ask
	// it what a template or a snapshot_id starts from.
	var snaps *snapsvc.Service
	if err := d.startEgressProxy(); err != nil { // issue 37
		return err
	}
	d.sbnet = networksvc.NewNet(networksvc.NetOptions{Service: d.net, Config: cfg, Events: d.evlog, Logger: d.log, Proxy: d.proxy.Addr(), Decisions: d.proxy.Recent})
	d.proxy.SetDirectory(d.sbnet)               // issue 37
	d.sbnet.ProtectPorts(d.proxy.Addr().Port()) // issue 37: never a gateway port
	mgr, err := sandbox.New(ctx, sandbox.Options{
		Volumes:   d.vols,
		Config:    cfg,
		Runtimes:  d.rts,
		Network:   d.sbnet,
		Images:    d.images,
		AgentPath: d.agentPath,
		StateDir:  d.opts.DataDir,
		Logger:    d.log,
		Observer:  obs.metrics,
		Events:    d.evlog,
		OriginOf: func(ctx context.Context, req *api.CreateRequest) (*sandbox.Origin, error) {
			return snaps.Origin(ctx, req)
		},
		Reattach: d.reattach(), // issue 35
	})
	if err != nil {
		return err
	}
	d.mgr = mgr
	d.sbnet.Bind(mgr)
	d.cleanShutdown = false
	d.undo.Push("closing the sandbox manager", func(ctx context.Context) error {
		err := mgr.Close(ctx)
		d.sbnet.Wait()
		d.cleanShutdown = err == nil
		return err
	})
	if snaps, err = snapsvc.New(mgr, snapsvc.Options{Dir: sandbox.CheckpointDir(d.opts.DataDir), StorageMB: cfg.SnapshotStorageMB, Logger: d.log,
		Events: d.evlog /* issue 39: template.build.* */, Dial: d.dialForBuild, /* issue 39: ADD of a URL */
		Ahead: d.aheadOf /* issue 46: containers created ahead for restores */}); err != nil {
		return err
	}
	d.resolver.SetDirectory(d.sbnet)
	d.jobRunner, err = jobs.Open(filepath.Join(d.opts.DataDir, "jobs.db"), mgr, jobs.Options{MaxRunning: cfg.JobsMaxRunning, MaxRunningPerOwner: cfg.JobsMaxRunningPerOwner,
		MaxQueuedPerOwner: cfg.MaxQueuedJobsPerOwner, MaxKept: cfg.JobsMaxKept, Events: d.evlog, Logger: d.log})
	if err != nil {
		return err
	}
	d.undo.Push("closing the job runner", func(context.Context) error { return d.jobRunner.Close() })
	d.sbnet.ProtectPorts(listenPorts(d.ln.Addr().String(), d.opts.EngineListen)...)
	// A host URL names the port the listener got (--listen :0 too).
	d.ports = portsvc.New(mgr, portsvc.Options{PreviewDomain: cfg.PreviewDomain, ListenPort: d.ln.Addr().(*net.TCPAddr).Port, TLS: d.certs != nil})
	mgr.OnStop(d.ports.Forget)
	nets, err := networksvc.New(mgr, d.sbnet, d.log)
	if err != nil {
		return err
	}
	mgr.OnStop(nets.Leave)
	mgr.OnStop(d.proxy.Forget) // issue 37
	mgr.OnStop(d.sbnet.Forget) // issue 41: a sandbox's egress defaults
	procs := procsvc.New(mgr, procsvc.LimitsOf(cfg))
	// The interpreter runs its kernels through the process functions; it
	// forgets a sandbox's contexts once the core has torn it down.
	interp := interpsvc.New(mgr, procs, cfg, mgr.Done())
	mgr.OnTeardown(interp.Forget)
	evs := eventsvc.New(mgr, d.evlog)
	// issue 43: 5, metrics ranges have a sample every period without reads
	metricSvc := metricsvc.New(mgr, metricsvc.Limits{WritableLayerMB: cfg.WritableLayerMB, Pids: cfg.PidsLimit})
	go metricSvc.Sample(mgr.Done(), api.MetricsSampleSecs*time.Second, mgr.LiveOwners)
	deps := functions.Deps{
		Sandboxes:   mgr,
		Files:       filesvc.New(mgr),
		Images:      imagesvc.New(d.images, mgr.ImageBook(), d.rts, imagesvc.Policy{IsAdmin: cfg.IsAdmin}),
		Metrics:     metricSvc,
		Processes:   procs,
		Snapshots:   snaps,
		Events:      evs,
		Webhooks:    d.hookAdmin,
		Alerts:      alertsvc.New(mgr, evs, mgr.Done(), d.log),
		Jobs:        d.jobRunner,
		Interpreter: interp,
		Ports:       d.ports,
		Networks:    nets,
		Environment: envsvc.New(mgr),
		Volumes:     volumesvc.New(d.vols),
		Git:         gitsvc.New(mgr, cfg.MaxOutputBytes, d.log),
		Observer:    obs.metrics,

		// issue 37
		Secrets:   d.secrets,
		EgressLog: nets,
	}
	d.newClusterAPI(mgr, &deps)       // issue 36: cluster mode's create, list, events and forwarding
	d.quota = quota.New(&d.cfg, deps) // issue 38: per-owner quotas
	deps.Quota = d.quota
	d.table = functions.New(deps)
	obs.attach(mgr.Live, d.images.CacheBytes)
	obs.metrics.SetDaemon(metrics.Daemon{Runtimes: runtimeMetrics(d.rts), Capacity: cfg.MaxConcurrentSandboxes})
	obs.metrics.WatchWarmPool(mgr.WarmPool)
	obs.metrics.WatchWebhooks(d.hooks.Stats)
	obs.metrics.WatchEvents(d.evlog)
	return nil
}

// startTransports builds the HTTP API (with MCP, E2B and the console on
// it), starts the engine WebSocket and the profiler.
func (d *daemon) startTransports(ctx context.Context) error {
	cfg, log, table := d.cfg, d.log, d.table
	read, write, idle := cfg.HTTPTimeouts()
	mcpHandler, err := mcpserver.HTTPHandler(table, mcpserver.Options{DefaultImage: cfg.MCPDefaultImage, Tools: cfg.MCPTools, Logger: log})
	if err != nil {
		return fmt.Errorf("mcp_tools: %w", err)
	}
	e2b, err := e2bTransport(cfg, d.opts.DataDir, table, d.guard, d.ports, write, log)
	if err != nil {
		return err
	}
	d.bodies = httpapi.NewBodyBudget(cfg.RequestBodyBudgetMB<<20, cfg.RequestBodyBudgetPerOwnerMB<<20) // issue 38
	d.srv = httpapi.NewServer(table, httpapi.Options{Logger: log, Version: d.opts.Version, Auth: d.tokens, Runtimes: d.rts.Infos(), Metrics: d.obs.handler(), MCP: mcpHandler, Ports: previewPorts{d.ports}, PreviewDomain: cfg.PreviewDomain, Guard: d.guard,
		Console: console.Handler(), Front: e2b.Wrap, ReadTimeout: read, WriteTimeout: write, IdleTimeout: idle,
		BodyBudget: d.bodies}) // issue 38
	d.srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	d.srv.ConnContext = auth.ConnContext
	d.srv.Handler = d.adminRoutes(d.srv.Handler)
	d.ln = d.withTLS(netutil.LimitListener(d.ln, cfg.MaxConnections))
	if d.sockLn != nil {
		d.sockLn = netutil.LimitListener(d.sockLn, cfg.MaxConnections)
	}
	d.serveErr = make(chan error, 3)
	d.eng = startEngine(d.engLn, d.withTLS, cfg.MaxConnections, table, engineapi.Options{Logger: log, Auth: d.tokens, Guard: d.guard,
		ReadTimeout: read, WriteTimeout: write, IdleTimeout: idle,
		SessionsPerOwner:           cfg.EngineSessionsPerOwner,
		ChannelBufferBytes:         cfg.ChannelBufferMB << 20,
		ChannelBufferPerOwnerBytes: cfg.ChannelBufferPerOwnerMB << 20,
		// issue 38
		MaxInvocations: cfg.EngineMaxInvocations, MaxInvocationsPerOwner: cfg.EngineMaxInvocationsPerOwner, BodyBudget: d.bodies,
	}, d.serveErr)
	d.undo.Push("stopping the engine WebSocket", d.eng.shutdown)
	d.sbnet.ProtectPorts(listenPorts(d.eng.addr())...)
	if d.prof, err = startProfiler(d.opts.PprofListen, d.serveErr); err != nil {
		return err
	}
	d.held.Push("stopping the profiler", func(context.Context) error { return d.prof.close() })
	d.sbnet.ProtectPorts(listenPorts(d.prof.addr())...)
	return nil
}

// serve starts serving the HTTP API and says so.
func (d *daemon) serve() {
	go func() { d.serveErr <- d.srv.Serve(d.ln) }()
	if d.sockLn != nil {
		go func() { d.serveErr <- d.srv.Serve(d.sockLn) }()
	}
	d.log.Info("hutch serving", "listen", d.ln.Addr().String(), "engine_listen", d.eng.addr(), "socket", d.opts.Socket, "tls", d.certs != nil, "data_dir", d.opts.DataDir,
		"runtimes", d.rts.Names(), "default_runtime", d.cfg.DefaultRuntime, "agent", d.agentPath, "image_cache", d.cacheDir, "pprof", d.prof.addr())
	if d.opts.Ready != nil {
		d.opts.Ready(d.ln.Addr().String())
	}
}

// waitAndShutdown serves until ctx ends or a server stops, then stops
// accepting requests and stops every sandbox at once: requests still in
// flight (a long exec) end when their sandbox does.
func (d *daemon) waitAndShutdown(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
		d.log.Info("shutting down")
	case err = <-d.serveErr:
		d.log.Error("server stopped", "err", err)
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- d.srv.Shutdown(shutCtx) }()
	engDone := make(chan error, 1)
	go func() { engDone <- d.eng.shutdown(shutCtx) }()
	// Running jobs go back to the queue before their sandboxes stop.
	jobErr := d.jobRunner.Close()
	mgrErr := d.mgr.Close(shutCtx)
	d.cleanShutdown = mgrErr == nil
	return errors.Join(ignoreClosed(err), ignoreClosed(<-httpDone), <-engDone, jobErr, mgrErr)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// listen binds addr, the value of flag; an address in use says what to do.
func listen(addr, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s %s: the address is in use (another hutch daemon, or another program, listens there): stop it, or pass %s with another address", flag, addr, flag)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln, nil
}

// ignoreNetClosed drops the error of closing a listener that is closed
// already.
func ignoreNetClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
