package daemon

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	_ "github.com/hutch-dev/hutch/internal/runtime/runtimes" // register backends
)

// runtimeOptions are the Options of cfg's runtime in dataDir: the generic
// settings and the runtime's own block (runtimes.<runtime>). Nothing here
// knows a backend: gVisor finds its runsc itself, so a daemon that runs
// another runtime never looks for it.
func runtimeOptions(cfg config.Config, dataDir string) (runtime.Options, error) {
	settings, err := cfg.RuntimeSettings()
	if err != nil {
		return runtime.Options{}, err
	}
	return runtime.Options{
		StateDir:             filepath.Join(dataDir, cfg.Runtime),
		NetworkPool:          cfg.NetworkPool,
		BlockPrivateNetworks: cfg.BlockPrivateNetworks,
		Settings:             settings,
	}, nil
}

// startRuntime builds cfg's runtime and logs its optional abilities.
func startRuntime(cfg config.Config, opts runtime.Options, log *slog.Logger) (runtime.Runtime, error) {
	opts.Logger = log
	rt, err := runtime.New(cfg.Runtime, opts)
	if err != nil {
		return nil, fmt.Errorf("starting runtime %s: %w", cfg.Runtime, err)
	}
	log.Info("runtime started", "runtime", rt.Name(), "abilities", runtime.AbilitiesOf(rt).String())
	return rt, nil
}

// applyRuntimeFlags lets flags override the runtime blocks of the config:
// --runsc-path sets runtimes.gvisor.runsc_path.
func applyRuntimeFlags(opts Options, cfg *config.Config) {
	if opts.RunscPath != "" {
		cfg.Runtimes.GVisor.RunscPath = opts.RunscPath
	}
}

// nameservers are the upstreams of the sandboxes' resolver: config
// sandbox_nameservers (checked by Validate) as host:port; none means the
// host's.
func nameservers(cfg config.Config) []string {
	var out []string
	for _, ns := range cfg.SandboxNameservers {
		if ap, err := config.ParseNameserver(ns); err == nil {
			out = append(out, ap.String())
		}
	}
	return out
}
