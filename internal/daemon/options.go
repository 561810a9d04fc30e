// Package daemon wires hutch's parts into the `hutch serve` process: config,
// image store, runtime, sandbox manager and transports, with start-up
// reconciliation and an ordered shutdown.
package daemon

import "log/slog"

// Default addresses and directories.
const (
	DefaultListen       = "127.0.0.1:3111"
	DefaultEngineListen = "127.0.0.1:49134"
	DefaultDataDir      = "/var/lib/hutch"
)

// Options are the settings of one daemon process (flags of `hutch serve`).
type Options struct {
	// ConfigPath is a YAML config file; empty means the defaults.
	ConfigPath string
	// Listen is the HTTP API address.
	Listen string
	// EngineListen is the engine WebSocket address; "" disables it.
	EngineListen string
	// DataDir holds the image cache, runtime state and metadata store.
	DataDir string
	// RunscPath and AgentPath override where the binaries are looked up
	// (next to the hutch binary, then on PATH).
	RunscPath string
	AgentPath string
	// Logger receives structured logs; nil means JSON to stderr.
	Logger *slog.Logger
	// PprofListen, when set, serves net/http/pprof on this loopback
	// address, apart from the API (pprof.go).
	PprofListen string
	// InsecureNoAuth lets a daemon without api_tokens listen on addresses
	// other than loopback (--insecure-no-auth; web.go).
	InsecureNoAuth bool
	// Ready, when set, is called with the bound HTTP address once serving.
	Ready func(httpAddr string)

	// issue 41: the local socket and plaintext off loopback.
	// Socket, when set, is a Unix socket the HTTP API is served on too
	// (--socket; socket.go), of group SocketGroup, mode 0660.
	Socket      string
	SocketGroup string
	// InsecurePlaintext lets a daemon without tls listen off loopback
	// (--insecure-plaintext; plaintext.go).
	InsecurePlaintext bool
	// Version is the daemon's version and build, which /healthz says.
	Version string
	// issue 35: Kubeconfig, when set, joins a Kubernetes cluster as a
	// node (--kubeconfig; cluster.go).
	Kubeconfig string
}
