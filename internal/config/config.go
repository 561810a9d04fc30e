// Package config is hutch's one configuration struct: the seed contract's keys
// plus hutch's own, their defaults, YAML loading (bare keys or the seed's
// engine block) and validation that names what is wrong.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// Presets are the built-in catalog images (e2b-base: issue 43, E2B's
// base template).
var Presets = []string{"python", "node", "python-data", "e2b-base"}

// DefaultAllowed are the presets image_allowlist allows by default: not
// python-data, which is large and built on first use; e2b-base, E2B's
// default template, so that the stock E2B SDK works as it comes.
var DefaultAllowed = []string{"python", "node", "e2b-base"}

// ImageCaps are per-image hard caps on a create request.
type ImageCaps struct {
	MaxCPUs     uint32 `yaml:"max_cpus"`
	MaxMemoryMB uint32 `yaml:"max_memory_mb"`
}

// Config is the daemon's configuration.
type Config struct {
	// The seed contract's keys.
	AutoInstall            bool                 `yaml:"auto_install"`
	ImageAllowlist         []string             `yaml:"image_allowlist"`
	DefaultIdleTimeoutSecs uint64               `yaml:"default_idle_timeout_secs"`
	MaxConcurrentSandboxes int                  `yaml:"max_concurrent_sandboxes"`
	DefaultCPUs            uint32               `yaml:"default_cpus"`
	DefaultMemoryMB        uint32               `yaml:"default_memory_mb"`
	PerImageCaps           map[string]ImageCaps `yaml:"per_image_caps"`
	CustomImages           map[string]string    `yaml:"custom_images"`

	// hutch's own keys.
	MaxConcurrentExecPerSandbox int    `yaml:"max_concurrent_exec_per_sandbox"`
	DefaultExecTimeoutMs        uint64 `yaml:"default_exec_timeout_ms"`
	MaxExecTimeoutMs            uint64 `yaml:"max_exec_timeout_ms"`
	MaxOutputBytes              int64  `yaml:"max_output_bytes"`
	// MaxProcessesPerSandbox bounds the background processes running in
	// a sandbox (sandbox::process::start), MaxPtysPerSandbox those of
	// them on a terminal; ProcessOutputBytes is the ring buffer each keeps
	// per output stream.
	MaxProcessesPerSandbox int   `yaml:"max_processes_per_sandbox"`
	MaxPtysPerSandbox      int   `yaml:"max_ptys_per_sandbox"`
	ProcessOutputBytes     int64 `yaml:"process_output_bytes"`
	PidsLimit              int64 `yaml:"pids_limit"`
	// StoppedRetentionSecs is how long a stopped sandbox stays listed
	// (stopped: true) and answers S004 before it is forgotten (S002).
	StoppedRetentionSecs uint64 `yaml:"stopped_retention_secs"`
	// PausedRetentionSecs is how long a paused sandbox is kept before it
	// is stopped; the idle timeout does not apply while it is paused.
	PausedRetentionSecs uint64 `yaml:"paused_retention_secs"`
	// SnapshotStorageMB bounds what snapshots take on disk, all owners'
	// together (in DATA_DIR/snapshots).
	SnapshotStorageMB uint64 `yaml:"snapshot_storage_mb"`
	// EventsMaxCount and EventsMaxAgeSecs bound the event log
	// (DATA_DIR/events.db): older events are dropped.
	EventsMaxCount   int    `yaml:"events_max_count"`
	EventsMaxAgeSecs uint64 `yaml:"events_max_age_secs"`
	// EventsMaxMB bounds the event log's bytes (in memory and so in its
	// file); EventsMaxCountPerOwner and EventsMaxMBPerOwner one owner's
	// share: an owner past either drops its own oldest events.
	EventsMaxMB            uint64 `yaml:"events_max_mb"`
	EventsMaxCountPerOwner int    `yaml:"events_max_count_per_owner"`
	EventsMaxMBPerOwner    uint64 `yaml:"events_max_mb_per_owner"`
	// MCPDefaultImage is the image of an MCP session's default sandbox
	// (python when empty).
	MCPDefaultImage string `yaml:"mcp_default_image"`
	// MCPTools is the tool set of an MCP session at /mcp that chooses
	// none (?tools=): "all", or "default" and areas, comma separated.
	MCPTools string `yaml:"mcp_tools"`
	// JobsMaxRunning bounds the queued jobs running at once, every
	// owner's; MaxQueuedJobsPerOwner one owner's queued and running jobs;
	// JobsMaxKept the jobs kept (DATA_DIR/jobs.db), the oldest ended
	// ones going first.
	JobsMaxRunning        int `yaml:"jobs_max_running"`
	MaxQueuedJobsPerOwner int `yaml:"max_queued_jobs_per_owner"`
	JobsMaxKept           int `yaml:"jobs_max_kept"`
	// JobsMaxRunningPerOwner bounds one owner's jobs running at once, so
	// that another owner's job finds a slot; 0 is one less than
	// JobsMaxRunning (at least 1).
	JobsMaxRunningPerOwner int `yaml:"jobs_max_running_per_owner"`

	// Webhooks are endpoints sent the events they name (webhooks.go).
	Webhooks []Webhook `yaml:"webhooks"`
	// ImageCacheDir holds built and pulled images; default DATA_DIR/images.
	ImageCacheDir string `yaml:"image_cache_dir"`
	// DefaultRuntime is the isolation backend of creates that name none
	// ("gvisor"); it must start on this host.
	DefaultRuntime string `yaml:"default_runtime"`
	// Runtime is the deprecated alias of default_runtime; Parse moves it.
	Runtime string `yaml:"runtime,omitempty"`
	// OfferedRuntimes are the runtimes creates may name; empty offers
	// every runtime hutch has that starts on this host.
	OfferedRuntimes []string `yaml:"offered_runtimes"`
	// NetworkPool is the IPv4 prefix that sandboxes with network: true
	// get a /30 each from (gateway and sandbox address).
	NetworkPool string `yaml:"network_pool"`
	// GatewayPorts are host loopback TCP ports that every sandbox with
	// network: true reaches at its gateway address, besides the ports of
	// the localhost URLs in its create-time env.
	GatewayPorts []int `yaml:"gateway_ports"`
	// PreviewDomain, when set, routes a request whose Host is
	// {port}-{sandbox_id}.{preview_domain} to that sandbox's exposed port
	// (whole path and query), never to the API.
	PreviewDomain string `yaml:"preview_domain"`
	// PackageIndexes are the indexes sandbox::interpreter::install uses
	// (the tools' own defaults when empty). An index on the host's
	// loopback is forwarded to every sandbox with a network, like
	// gateway_ports.
	PackageIndexes PackageIndexes `yaml:"package_indexes"`
	// WritableLayerMB bounds what a sandbox can write to its root
	// filesystem; a write past it fails with ENOSPC inside the sandbox.
	WritableLayerMB uint64 `yaml:"writable_layer_mb"`
	// APITokens maps owners to bearer tokens. When set, every API route
	// but /healthz needs a token, and each owner sees only its sandboxes.
	APITokens map[string]string `yaml:"api_tokens"`
	// WarmPool pins how many pre-booted sandboxes to keep ready per image
	// ({python: 2, node: 1}); a create that fits takes one. An image it
	// does not name is sized by demand while WarmPoolAuto is on; a present
	// but empty warm_pool ({}) turns that off (pool.go).
	WarmPool map[string]int `yaml:"warm_pool,omitempty"`
	// WarmPoolAuto sizes the pools of the images warm_pool does not name
	// from the recent creates (sandbox/poolplan); WarmPoolMax bounds each
	// such image's pool and WarmPoolMemoryMB the host memory of all of
	// them together.
	WarmPoolAuto     bool `yaml:"warm_pool_auto"`
	WarmPoolMax      int  `yaml:"warm_pool_max"`
	WarmPoolMemoryMB int  `yaml:"warm_pool_memory_mb"`
	// MaxConcurrentBoots bounds the sandbox boots under way at once (the
	// runtime start until the agent answers); more creates queue, and their
	// boot timeout starts when their boot does. 0 is the host's CPUs.
	MaxConcurrentBoots int `yaml:"max_concurrent_boots"`
	// Runtimes are the runtimes' own blocks of settings (runtimes.go).
	Runtimes Runtimes `yaml:"runtimes"`
	// SystrapFastPath is the deprecated top-level alias of
	// runtimes.gvisor.systrap_fast_path; Parse moves it there.
	SystrapFastPath string `yaml:"systrap_fast_path,omitempty"`
	// Deprecated lists a warning for each deprecated key the file used;
	// the daemon logs them.
	Deprecated []string `yaml:"-"`

	// Keys that keep owners apart (owners.go).
	// AdminOwners are the owners of api_tokens who may pull and remove
	// cached images; without api_tokens the one local user may.
	AdminOwners []string `yaml:"admin_owners"`
	// ForwardablePorts are the host loopback TCP ports a create-time env
	// URL may have forwarded to a network sandbox's gateway. It applies
	// when api_tokens are set or it is not empty; otherwise every port
	// named is forwarded. gateway_ports are always forwardable.
	ForwardablePorts []int `yaml:"forwardable_ports"`
	// MaxSandboxesPerOwner caps one owner's live sandboxes and creates in
	// progress; 0 is no cap beyond max_concurrent_sandboxes.
	MaxSandboxesPerOwner int `yaml:"max_sandboxes_per_owner"`
	// MaxConcurrentExecPerOwner caps one owner's execs in flight across
	// all of its sandboxes; 0 is no cap.
	MaxConcurrentExecPerOwner int `yaml:"max_concurrent_exec_per_owner"`
	// CrashWatchdog starts a watchdog process beside the daemon that
	// destroys the daemon's sandboxes (and their network plumbing) when
	// the daemon dies without shutting down, even those whose agent cannot
	// notice (a stopped PID 1). Off leaves them to the next start.
	CrashWatchdog bool `yaml:"crash_watchdog"`
	// AllowedHosts are the names and addresses, besides loopback ones and
	// the host of each listen address, that requests may carry as Host
	// ("*.example.com" for every name under example.com); any other Host
	// is refused, which shuts out DNS-rebound web pages (internal/webguard).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are the web origins (scheme://host[:port]) whose
	// pages may call the APIs; a request from any other page (an Origin
	// that is not the request's own, or Sec-Fetch-Site cross-site or
	// same-site) is refused.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// Bounds on clients (clients.go).
	//
	// MaxConnections bounds the connections each listener (REST API,
	// engine WebSocket) serves at once; more wait to be accepted.
	MaxConnections int `yaml:"max_connections"`
	// HTTPReadTimeoutSecs bounds reading a request, headers and body; a
	// streamed upload must instead deliver every 64 KiB within it.
	HTTPReadTimeoutSecs uint64 `yaml:"http_read_timeout_secs"`
	// HTTPWriteTimeoutSecs bounds writing an answer once it is computed (a
	// long exec is not cut), each 64 KiB of a streamed download, and each
	// message of the engine WebSocket.
	HTTPWriteTimeoutSecs uint64 `yaml:"http_write_timeout_secs"`
	// HTTPIdleTimeoutSecs is how long a kept-alive connection may wait for
	// its next request.
	HTTPIdleTimeoutSecs uint64 `yaml:"http_idle_timeout_secs"`
	// EngineSessionsPerOwner bounds the engine WebSocket sessions one
	// owner has open at once.
	EngineSessionsPerOwner int `yaml:"engine_sessions_per_owner"`
	// ChannelBufferMB bounds the bytes that all engine stream channels
	// hold written but not yet read; ChannelBufferPerOwnerMB bounds one
	// owner's share. A write past either aborts its stream.
	ChannelBufferMB         int64 `yaml:"channel_buffer_mb"`
	ChannelBufferPerOwnerMB int64 `yaml:"channel_buffer_per_owner_mb"`
	// MaxImageUnpackedMB bounds what one pulled image may unpack to (file
	// content plus 512 bytes per entry), against decompression bombs.
	MaxImageUnpackedMB uint64 `yaml:"max_image_unpacked_mb"`
	// BlockPrivateNetworks closes private and cloud-internal IPv4 ranges
	// (RFC 1918, 100.64.0.0/10, ...) to sandboxes with network: true.
	BlockPrivateNetworks bool `yaml:"block_private_networks"`
	// SandboxNameservers are the nameservers hutch's resolver asks for
	// sandboxes with network: true (IP or IP:port); empty means the
	// host's own, from /etc/resolv.conf.
	SandboxNameservers []string `yaml:"sandbox_nameservers"`
	// Volumes (volumes.go): the size of a volume created without one, the
	// largest size, and how many volumes one owner may have.
	VolumeDefaultSizeMB uint64 `yaml:"volume_default_size_mb"`
	VolumeMaxSizeMB     uint64 `yaml:"volume_max_size_mb"`
	MaxVolumesPerOwner  int    `yaml:"max_volumes_per_owner"`
	// E2B configures the E2B-compatible API (e2b.go).
	E2B E2B `yaml:"e2b"`
	// issue 38: per-owner quotas (quota.go), and the daemon-wide budget
	// of request bodies in flight, in all and per owner.
	Quota                       Quota `yaml:"quota"`
	RequestBodyBudgetMB         int64 `yaml:"request_body_budget_mb"`
	RequestBodyBudgetPerOwnerMB int64 `yaml:"request_body_budget_per_owner_mb"`

	// issue 41: operations (ops.go): TLS on the TCP listeners, and who a
	// request on the local Unix socket acts for.
	TLS              TLS    `yaml:"tls"`
	LocalSocketOwner string `yaml:"local_socket_owner"`
	// issue 38: the engine invocations running across all sessions, in
	// all and per owner.
	EngineMaxInvocations         int `yaml:"engine_max_invocations"`
	EngineMaxInvocationsPerOwner int `yaml:"engine_max_invocations_per_owner"`
	// issue 35: Cluster is the cluster node's block (cluster.go).
	Cluster Cluster `yaml:"cluster"`
}

// Default returns the configuration used when no file is given.
func Default() Config {
	return Config{
		AutoInstall:                 true,
		ImageAllowlist:              append([]string(nil), DefaultAllowed...),
		DefaultIdleTimeoutSecs:      300,
		MaxConcurrentSandboxes:      32,
		DefaultCPUs:                 1,
		DefaultMemoryMB:             512,
		MaxConcurrentExecPerSandbox: 4,
		DefaultExecTimeoutMs:        30_000,
		MaxExecTimeoutMs:            300_000,
		MaxOutputBytes:              1 << 20,
		MaxProcessesPerSandbox:      64,
		MaxPtysPerSandbox:           8,
		ProcessOutputBytes:          1 << 20,
		PidsLimit:                   1024,
		StoppedRetentionSecs:        600,
		PausedRetentionSecs:         86400,
		SnapshotStorageMB:           10240,
		EventsMaxCount:              100000,
		EventsMaxAgeSecs:            7 * 24 * 3600,
		EventsMaxMB:                 64,
		EventsMaxCountPerOwner:      25000,
		EventsMaxMBPerOwner:         16,
		JobsMaxRunning:              4,
		MaxQueuedJobsPerOwner:       1000,
		JobsMaxKept:                 10000,
		DefaultRuntime:              "gvisor",
		NetworkPool:                 DefaultNetworkPool,
		WritableLayerMB:             2048,
		Runtimes:                    defaultRuntimes(),
		CrashWatchdog:               true,
		MaxConnections:              512,
		HTTPReadTimeoutSecs:         60,
		HTTPWriteTimeoutSecs:        60,
		HTTPIdleTimeoutSecs:         120,
		EngineSessionsPerOwner:      64,
		ChannelBufferMB:             256,
		ChannelBufferPerOwnerMB:     64,
		MaxImageUnpackedMB:          8192,
		BlockPrivateNetworks:        true,
		VolumeDefaultSizeMB:         1024,
		VolumeMaxSizeMB:             10240,
		MaxVolumesPerOwner:          32,
		WarmPoolAuto:                true,
		WarmPoolMax:                 DefaultWarmPoolMax,
		WarmPoolMemoryMB:            DefaultWarmPoolMemoryMB,
		E2B:                         defaultE2B(),
		// issue 38
		RequestBodyBudgetMB:          256,
		RequestBodyBudgetPerOwnerMB:  64,
		EngineMaxInvocations:         4096,
		EngineMaxInvocationsPerOwner: 1024,
		// issue 35: the cluster node's block.
		Cluster: defaultCluster(),
	}
}

// Validate explains the first thing wrong with c, naming the key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MaxConcurrentSandboxes < 1 || c.MaxConcurrentSandboxes > 10_000 {
		bad("max_concurrent_sandboxes must be between 1 and 10000, got %d", c.MaxConcurrentSandboxes)
	}
	if err := CheckCPUs(c.DefaultCPUs); err != nil {
		bad("default_%v", err)
	}
	if err := CheckMemoryMB(c.DefaultMemoryMB); err != nil {
		bad("default_%v", err)
	}
	if c.DefaultIdleTimeoutSecs < 1 {
		bad("default_idle_timeout_secs must be at least 1")
	}
	for _, ns := range c.SandboxNameservers {
		if _, err := ParseNameserver(ns); err != nil {
			bad("sandbox_nameservers: %v", err)
		}
	}
	if c.MaxConcurrentExecPerSandbox < 1 || c.MaxConcurrentExecPerSandbox > 1024 {
		bad("max_concurrent_exec_per_sandbox must be between 1 and 1024, got %d", c.MaxConcurrentExecPerSandbox)
	}
	if c.MaxExecTimeoutMs < 1 {
		bad("max_exec_timeout_ms must be at least 1")
	}
	if c.DefaultExecTimeoutMs < 1 || c.DefaultExecTimeoutMs > c.MaxExecTimeoutMs {
		bad("default_exec_timeout_ms must be between 1 and max_exec_timeout_ms (%d), got %d", c.MaxExecTimeoutMs, c.DefaultExecTimeoutMs)
	}
	if c.MaxOutputBytes < 1024 || c.MaxOutputBytes > 64<<20 {
		bad("max_output_bytes must be between 1024 and 67108864, got %d", c.MaxOutputBytes)
	}
	if c.MaxProcessesPerSandbox < 1 || c.MaxProcessesPerSandbox > 512 {
		bad("max_processes_per_sandbox must be between 1 and 512, got %d", c.MaxProcessesPerSandbox)
	}
	if c.MaxPtysPerSandbox < 0 || c.MaxPtysPerSandbox > c.MaxProcessesPerSandbox {
		bad("max_ptys_per_sandbox must be between 0 and max_processes_per_sandbox (%d), got %d", c.MaxProcessesPerSandbox, c.MaxPtysPerSandbox)
	}
	if c.ProcessOutputBytes < 64<<10 || c.ProcessOutputBytes > 64<<20 {
		bad("process_output_bytes must be between 65536 and 67108864, got %d", c.ProcessOutputBytes)
	}
	errs = append(errs, c.validateLifecycle()...)
	errs = append(errs, c.validateRuntimes()...)
	errs = append(errs, c.validateNetwork()...)
	errs = append(errs, c.validateWarmPool()...)
	errs = append(errs, c.validateVolumes()...)
	for name := range c.CustomImages {
		if slices.Contains(Presets, name) {
			bad("custom_images key %q shadows the preset of that name; choose another name", name)
		}
		if name == "" {
			bad("custom_images has an empty name")
		}
	}
	if c.MCPDefaultImage != "" && !c.inCatalog(c.MCPDefaultImage) {
		bad("mcp_default_image %s", notInCatalog)
	}
	if _, err := api.ParseToolSet(c.MCPTools); err != nil {
		bad("mcp_tools: %v", err)
	}
	for name, caps := range c.PerImageCaps {
		if caps.MaxCPUs == 0 && caps.MaxMemoryMB == 0 {
			bad("per_image_caps.%s sets neither max_cpus nor max_memory_mb", name)
		}
		// A cap on a mistyped name would silently cap nothing.
		if !c.inCatalog(name) {
			bad("per_image_caps.%s %s", name, notInCatalog)
		}
	}
	errs = append(errs, c.validateOwners()...)
	errs = append(errs, c.validateWebhooks()...)
	errs = append(errs, c.validateE2B()...)
	if _, err := webguard.New(c.AllowedHosts, c.AllowedOrigins); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateClients()...)
	errs = append(errs, c.validateQuota()...) // issue 38
	errs = append(errs, c.validateOps()...)   // issue 41
	// issue 35: the cluster node's block.
	errs = append(errs, c.validateCluster()...)
	if c.MaxImageUnpackedMB < 64 || c.MaxImageUnpackedMB > 1<<20 {
		bad("max_image_unpacked_mb must be between 64 and 1048576, got %d", c.MaxImageUnpackedMB)
	}
	return errors.Join(onlyTheBadKeys(errs)...)
}

// onlyTheBadKeys drops the errors that only follow from another key's: a
// check relating one key to another (default_exec_timeout_ms to
// max_exec_timeout_ms) fails too when that other key is out of range,
// about a key the user may never have set. Each error names its key
// first; one that names another key whose own error stands on its own is
// dropped.
func onlyTheBadKeys(errs []error) []error {
	own := make([]string, len(errs))
	failing := map[string]bool{}
	for i, err := range errs {
		own[i] = leadingKey(err.Error())
		failing[own[i]] = own[i] != ""
	}
	// mentions reports whether error i names a failing key other than its own.
	mentions := func(i int, keys map[string]bool) bool {
		for k, ok := range keys {
			if ok && k != own[i] && namesKey(errs[i].Error(), k) {
				return true
			}
		}
		return false
	}
	primary := map[string]bool{}
	for i := range errs {
		if own[i] != "" && !mentions(i, failing) {
			primary[own[i]] = true
		}
	}
	out := errs[:0:0]
	for i, err := range errs {
		if !mentions(i, primary) {
			out = append(out, err)
		}
	}
	return out
}

// isKeyByte reports whether b may be part of a config key.
func isKeyByte(b byte) bool { return b == '_' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

// leadingKey is the key an error message starts with ("" when none):
// its leading run of key bytes and dots.
func leadingKey(msg string) string {
	n := 0
	for n < len(msg) && (isKeyByte(msg[n]) || msg[n] == '.') {
		n++
	}
	return strings.TrimSuffix(msg[:n], ".")
}

// namesKey reports whether msg names key as a word of its own anywhere
// but at its start.
func namesKey(msg, key string) bool {
	for i := 1; i+len(key) <= len(msg); i++ {
		j := strings.Index(msg[i:], key)
		if j < 0 {
			return false
		}
		i += j
		end := i + len(key)
		if !isKeyByte(msg[i-1]) && msg[i-1] != '.' && (end == len(msg) || !isKeyByte(msg[end])) {
			return true
		}
	}
	return false
}

// normalize writes in one form the keys that may be spelt several ways:
// preview_domain in lower case, without a trailing dot.
func (c *Config) normalize() {
	c.PreviewDomain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(c.PreviewDomain)), ".")
}

// inCatalog reports whether name is a preset or a custom_images key.
func (c *Config) inCatalog(name string) bool {
	_, custom := c.CustomImages[name]
	return custom || slices.Contains(Presets, name)
}

// notInCatalog ends the error of a key that names no catalog image.
var notInCatalog = "names no catalog image (presets: " + strings.Join(Presets, ", ") + "; or a custom_images key)"

// Load reads a YAML config file over the defaults and validates it.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes YAML over the defaults and validates the result. The keys
// may stand at the top level, or inside the seed's engine block
// `workers: [{name: iii-sandbox, config: {...}}]`. Unknown keys and wrong
// types are errors that carry their line number.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, err
	}
	if len(doc.Content) == 0 {
		return cfg, cfg.Validate()
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Config{}, fmt.Errorf("line %d: the config must be a mapping of keys", root.Line)
	}
	node, err := configNode(root)
	if err != nil {
		return Config{}, err
	}
	if node != nil {
		if err := checkKeys(node, reflect.TypeOf(cfg), ""); err != nil {
			return Config{}, err
		}
		if err := node.Decode(&cfg); err != nil {
			return Config{}, nameTypeErrors(tidyYAMLError(err), node)
		}
		if err := cfg.applyAliases(node); err != nil {
			return Config{}, err
		}
		if err := cfg.emptyWarmPool(node); err != nil {
			return Config{}, err
		}
		cfg.followBounds(node)
	}
	cfg.normalize()
	return cfg, cfg.Validate()
}

// followBounds lowers each default the config node does not set to the
// bound the config lowered below it, so that max_exec_timeout_ms: 2000
// alone makes the default exec timeout 2000 ms rather than an error about
// default_exec_timeout_ms, a key the user never set. A value set is
// checked against its bound as it is.
func (c *Config) followBounds(node *yaml.Node) {
	unset := func(key string) bool { return mappingValue(node, key) == nil }
	if unset("default_exec_timeout_ms") {
		c.DefaultExecTimeoutMs = min(c.DefaultExecTimeoutMs, c.MaxExecTimeoutMs)
	}
	if unset("max_ptys_per_sandbox") {
		c.MaxPtysPerSandbox = min(c.MaxPtysPerSandbox, c.MaxProcessesPerSandbox)
	}
	if unset("channel_buffer_per_owner_mb") {
		c.ChannelBufferPerOwnerMB = min(c.ChannelBufferPerOwnerMB, c.ChannelBufferMB)
	}
	if unset("volume_default_size_mb") {
		c.VolumeDefaultSizeMB = min(c.VolumeDefaultSizeMB, c.VolumeMaxSizeMB)
	}
}

// configNode finds the mapping that holds the config keys: the seed's
// iii-sandbox worker block when there is a `workers` key, else the root.
func configNode(root *yaml.Node) (*yaml.Node, error) {
	workers := mappingValue(root, "workers")
	if workers == nil {
		return root, nil
	}
	if len(root.Content) > 2 {
		return nil, fmt.Errorf("line %d: with a `workers` block, put every key inside the iii-sandbox worker's config", root.Line)
	}
	if workers.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: workers must be a list", workers.Line)
	}
	for _, w := range workers.Content {
		name := mappingValue(w, "name")
		if name == nil || name.Value != "iii-sandbox" {
			continue
		}
		for i := 0; i+1 < len(w.Content); i += 2 {
			if k := w.Content[i].Value; k != "name" && k != "config" {
				return nil, fmt.Errorf("line %d: unknown key %q in the iii-sandbox worker block", w.Content[i].Line, k)
			}
		}
		cfg := mappingValue(w, "config")
		if cfg == nil || cfg.Tag == "!!null" {
			return nil, nil
		}
		if cfg.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: config must be a mapping", cfg.Line)
		}
		return cfg, nil
	}
	return nil, fmt.Errorf("line %d: workers has no entry named iii-sandbox", workers.Line)
}

// mappingValue returns the value node of key in a mapping node, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// checkKeys reports the first key in n that t (a struct) has no yaml field
// for, recursing into nested structs and maps of structs.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(Runtimes{}) {
		return checkRuntimeKeys(n, prefix)
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag != "" && tag != "-" {
				fields[tag] = t.Field(i).Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("line %d: unknown key %q%s", k.Line, prefix+k.Value, suggestion(k.Value, fields))
			}
			if err := checkKeys(n.Content[i+1], ft, prefix+k.Value+"."); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), prefix+n.Content[i].Value+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// suggestion names a known key that differs from k only in case or
// separators, for typos such as "maxConcurrentSandboxes".
func suggestion(k string, fields map[string]reflect.Type) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for f := range fields {
		if norm(f) == norm(k) {
			return fmt.Sprintf(" (did you mean %q?)", f)
		}
	}
	return ""
}

// tidyYAMLError drops the library's prefix from type errors.
func tidyYAMLError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	msg = strings.TrimSpace(msg)
	return errors.New(strings.ReplaceAll(msg, "\n  ", "; "))
}

// Marshal renders c as YAML (for `hutch serve --print-config`).
func (c Config) Marshal() []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	c.APITokens = redactTokens(c.APITokens)
	c.E2B.APIKeys = redactTokens(c.E2B.APIKeys)
	if c.Cluster.PeerToken != "" { // issue 36
		c.Cluster.PeerToken = "<redacted>"
	}
	c.Webhooks = append([]Webhook(nil), c.Webhooks...)
	for i := range c.Webhooks {
		c.Webhooks[i].Secret = "<redacted>"
	}
	_ = enc.Encode(c)
	return buf.Bytes()
}

// ParseNameserver reads a nameserver of sandbox_nameservers: an IP
// address, with or without a port (53).
func ParseNameserver(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Port() != 0 {
		return ap, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q is not an IP address or IP:port", s)
	}
	return netip.AddrPortFrom(a, 53), nil
}
