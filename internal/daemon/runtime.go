package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/metrics"
	"github.com/hutch-dev/hutch/internal/netsvc"
	"github.com/hutch-dev/hutch/internal/runtime"
	_ "github.com/hutch-dev/hutch/internal/runtime/runtimes" // register backends
	"github.com/hutch-dev/hutch/internal/sandbox/snapsvc"
)

// runtimeOptions are the Options of runtime name in dataDir: the generic
// settings and the runtime's own block (runtimes.<name>). Nothing here
// knows a backend: gVisor finds its runsc itself, so a daemon that does
// not offer it never looks for it.
func runtimeOptions(cfg config.Config, name, dataDir string) (runtime.Options, error) {
	settings, err := cfg.RuntimeSettings(name)
	if err != nil {
		return runtime.Options{}, err
	}
	return runtime.Options{
		StateDir: filepath.Join(dataDir, name),
		Settings: settings,
	}, nil
}

// offeredRuntimes are the runtimes a daemon tries to start: the config's
// offered_runtimes, or every registered one; the default first.
func offeredRuntimes(cfg config.Config) []string {
	names := cfg.OfferedRuntimes
	if len(names) == 0 {
		names = runtime.Names()
	}
	out := []string{cfg.DefaultRuntime}
	for _, n := range names {
		if n != cfg.DefaultRuntime {
			out = append(out, n)
		}
	}
	return out
}

// startRuntimes builds the offered runtimes in dataDir. The default one
// must start; another that
// cannot (no QEMU, no runsc) is logged and listed as unavailable, with
// why. It returns the set and the options of each ready runtime, which
// the crash watchdog builds them again from.
func startRuntimes(cfg config.Config, dataDir string, log *slog.Logger) (*runtime.Set, map[string]runtime.Options, error) {
	var ready []runtime.Runtime
	opts := map[string]runtime.Options{}
	down := map[string]string{}
	for _, name := range offeredRuntimes(cfg) {
		o, err := runtimeOptions(cfg, name, dataDir)
		if err == nil {
			var rt runtime.Runtime
			if rt, err = startRuntime(name, o, log); err == nil {
				ready, opts[name] = append(ready, rt), o
				continue
			}
		}
		if name == cfg.DefaultRuntime {
			closeRuntimes(ready)
			return nil, nil, err
		}
		log.Info("runtime not available", "runtime", name, "why", err)
		down[name] = err.Error()
	}
	set, err := runtime.NewSet(cfg.DefaultRuntime, ready, down)
	if err != nil {
		closeRuntimes(ready)
		return nil, nil, err
	}
	return set, opts, nil
}

// startRuntime builds runtime name and logs its optional abilities.
func startRuntime(name string, opts runtime.Options, log *slog.Logger) (runtime.Runtime, error) {
	opts.Logger = log
	rt, err := runtime.New(name, opts)
	if err != nil {
		return nil, fmt.Errorf("starting runtime %s: %w", name, err)
	}
	log.Info("runtime started", "runtime", rt.Name(), "abilities", runtime.AbilitiesOf(rt).String())
	return rt, nil
}

// networkOptions are the options of the daemon's network service in
// dataDir, with dns as the sandboxes' resolver: one service, one firewall
// table, for every runtime.
func networkOptions(cfg config.Config, dataDir, dns string) netsvc.Options {
	return netsvc.Options{
		Dir:    filepath.Join(dataDir, "network"),
		Pool:   cfg.NetworkPool,
		DNS:    dns,
		CACert: egressCAFile(dataDir), // issue 37
	}
}

// closeRuntimes closes those of rts that hold something (io.Closer).
func closeRuntimes(rts []runtime.Runtime) error {
	var errs []error
	for _, rt := range rts {
		if c, ok := rt.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// runtimeMetrics describes the ready runtimes of rts for hutch_runtime_info.
func runtimeMetrics(rts *runtime.Set) []metrics.Runtime {
	var out []metrics.Runtime
	for _, i := range rts.Infos() {
		if i.Available {
			out = append(out, metrics.Runtime{Name: i.Name, Mode: i.Mode, Abilities: i.Abilities, Default: i.Default})
		}
	}
	return out
}

// applyRuntimeFlags lets flags override the runtime blocks of the config:
// --runsc-path sets runtimes.gvisor.runsc_path.
func applyRuntimeFlags(opts Options, cfg *config.Config) error {
	if opts.RunscPath != "" {
		return cfg.Runtimes.Set("gvisor", "runsc_path", opts.RunscPath)
	}
	return nil
}

// aheadOf is the containers created ahead for restores of the ready
// runtime named name ("" the default), nil when it makes none (issue 46).
func (d *daemon) aheadOf(name string) snapsvc.Ahead {
	rt, err := d.rts.Get(name)
	if err != nil {
		return nil
	}
	a, _ := rt.(snapsvc.Ahead)
	return a
}
