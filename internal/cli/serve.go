package cli

// This file is the CLI's only link to the daemon: `hutch serve` calls
// daemon.Run in this process.

import (
	"log/slog"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/internal/daemon"
)

// Defaults shared with the daemon.
const (
	defaultListen       = daemon.DefaultListen
	defaultEngineListen = daemon.DefaultEngineListen
	defaultDataDir      = daemon.DefaultDataDir
)

func (a *app) serveCmd() *cobra.Command {
	var opts daemon.Options
	var level string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the hutch daemon (HTTP API and engine WebSocket)",
		Args:  cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.ConfigPath, "config", "", "YAML config file (defaults when omitted)")
	fl.StringVar(&opts.Listen, "listen", defaultListen, "HTTP API address")
	fl.StringVar(&opts.EngineListen, "engine-listen", daemon.DefaultEngineListen, `engine WebSocket address ("" disables it)`)
	fl.StringVar(&opts.DataDir, "data-dir", a.dataDir(), "image cache, sandbox state and metadata ($HUTCH_DATA_DIR)")
	fl.StringVar(&opts.RunscPath, "runsc-path", "", "runsc binary (default: next to hutch, then PATH)")
	fl.StringVar(&opts.AgentPath, "agent-path", "", "hutch-agent binary (default: next to hutch, then PATH)")
	fl.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	fl.BoolVar(&opts.InsecureNoAuth, strings.TrimPrefix(daemon.InsecureNoAuthFlag, "--"), false,
		"allow a --listen or --engine-listen address off loopback without api_tokens (anyone who reaches it runs code on this host)")
	// issue 41: the local socket and plaintext off loopback.
	fl.StringVar(&opts.Socket, "socket", "", `also serve the HTTP API on this Unix socket, mode 0660 (the package's unit uses `+daemon.DefaultSocket+`; "" disables it)`)
	fl.StringVar(&opts.SocketGroup, "socket-group", daemon.DefaultSocketGroup, "the group whose members may use --socket")
	fl.BoolVar(&opts.InsecurePlaintext, strings.TrimPrefix(daemon.InsecurePlaintextFlag, "--"), false,
		"allow a --listen or --engine-listen address off loopback without tls (tokens and code cross the network in the clear)")
	fl.StringVar(&opts.PprofListen, "pprof", "", `serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060; "" disables it)`)
	// issue 35: join a Kubernetes cluster as a node.
	fl.StringVar(&opts.Kubeconfig, "kubeconfig", "", "join the Kubernetes cluster of this kubeconfig as a node (docs/cluster.md); the cluster: block of --config configures it")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return usagef("--log-level must be debug, info, warn or error, not %q", level)
		}
		if opts.PprofListen != "" {
			if err := daemon.CheckPprofAddr(opts.PprofListen); err != nil {
				return usagef("--pprof: %v", err)
			}
		}
		opts.Version = buildVersion()
		opts.Logger = slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
		return action(func(*cobra.Command, []string) error {
			return daemon.Run(cmd.Context(), opts)
		})(cmd, nil)
	}
	return cmd
}

// watchdogCmd is the crash watchdog a daemon starts beside itself (see
// internal/daemon/watchdog.go); it is not for people, so it is hidden.
// It ignores the signals that end a daemon: the daemon's exit is its cue.
func (a *app) watchdogCmd() *cobra.Command {
	return &cobra.Command{
		Use:    daemon.WatchdogCommand,
		Short:  "Destroy a daemon's sandboxes when it dies (started by hutch serve)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: action(func(*cobra.Command, []string) error {
			signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			return daemon.RunWatchdog(a.stdin, a.stdout, slog.New(slog.NewJSONHandler(a.stderr, nil)))
		}),
	}
}
