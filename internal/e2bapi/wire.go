package e2bapi

// The control plane's payloads, as E2B's SDKs send and read them
// (E2B's spec/openapi.yml). Fields hutch does not act on are decoded and
// ignored, as E2B's own API does with what an older server lacks.

import (
	"encoding/json"
	"strconv"
	"time"
)

// EnvdVersion is the envd version reported for every sandbox: 0.6.4 opens
// each of the SDK's gates, all of which hutch's envd serves (closeStdin,
// octet-stream uploads, user-less calls; 0.6.2's file metadata, kept as
// user.e2b.* extended attributes; 0.6.3's entries in watch events; 0.6.4's
// watches on network mounts, which hutch does not refuse: a volume is a
// host directory whose changes inside the sandbox a watch sees).
const EnvdVersion = "0.6.4"

// clientID is the clientID of every answer (E2B's cluster node id).
const clientID = "hutch"

// newSandbox is the body of POST /v2/sandboxes and POST /sandboxes.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *uint64           `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             *networkConfig    `json:"network"`
	AutoPause           bool              `json:"autoPause"`
	// AutoPauseMemory false makes the end's pause keep the files only.
	AutoPauseMemory *bool `json:"autoPauseMemory"`
	AutoResume      *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
	VolumeMounts []volumeMount `json:"volumeMounts"` // issue 40: mapped in parity.go
}

// volumeMount is SandboxVolumeMount: a volume (by id, hutch's name) at a path.
type volumeMount struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// networkConfig is a sandbox's network block.
type networkConfig struct {
	AllowOut []string `json:"allowOut,omitempty"`
	DenyOut  []string `json:"denyOut,omitempty"`
	// issue 37: the rest of E2B's block (network.go).
	Rules              map[string][]networkRule `json:"rules,omitempty"`
	AllowPublicTraffic *bool                    `json:"allowPublicTraffic,omitempty"`
	MaskRequestHost    string                   `json:"maskRequestHost,omitempty"`
	HTTPSPorts         []int                    `json:"httpsPorts,omitempty"`
	EgressProxy        json.RawMessage          `json:"egressProxy,omitempty"`
}

// timeoutBody is the body of /timeout and /connect.
type timeoutBody struct {
	Timeout *uint64 `json:"timeout"`
}

// pauseBody is the body of POST /sandboxes/{id}/pause: memory false keeps
// the sandbox's files only (api.PauseFiles).
type pauseBody struct {
	Memory *bool `json:"memory"`
}

// sandboxAnswer is the answer of create and connect.
type sandboxAnswer struct {
	SandboxID          string `json:"sandboxID"`
	TemplateID         string `json:"templateID"`
	ClientID           string `json:"clientID"`
	EnvdVersion        string `json:"envdVersion"`
	EnvdAccessToken    string `json:"envdAccessToken"`
	TrafficAccessToken string `json:"trafficAccessToken"`
	Domain             string `json:"domain,omitempty"`
}

// listedSandbox is an entry of GET /v2/sandboxes.
type listedSandbox struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	ClientID    string            `json:"clientID"`
	StartedAt   string            `json:"startedAt"`
	EndAt       string            `json:"endAt"`
	State       string            `json:"state"`
	CPUCount    uint32            `json:"cpuCount"`
	MemoryMB    uint32            `json:"memoryMB"`
	DiskSizeMB  uint64            `json:"diskSizeMB"`
	EnvdVersion string            `json:"envdVersion"`
	Metadata    map[string]string `json:"metadata"`
}

// sandboxDetail is the answer of GET /sandboxes/{id}.
type sandboxDetail struct {
	listedSandbox
	EnvdAccessToken     string         `json:"envdAccessToken"`
	Domain              string         `json:"domain,omitempty"`
	AllowInternetAccess bool           `json:"allowInternetAccess"`
	Network             *networkConfig `json:"network,omitempty"`
	Lifecycle           lifecycle      `json:"lifecycle"`
	VolumeMounts        []volumeMount  `json:"volumeMounts"` // issue 40
}

// lifecycle is what happens to a sandbox at its timeout.
type lifecycle struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

// metric is an entry of GET /sandboxes/{id}/metrics.
type metric struct {
	Timestamp     string  `json:"timestamp"`
	TimestampUnix int64   `json:"timestampUnix"`
	CPUCount      uint32  `json:"cpuCount"`
	CPUUsedPct    float64 `json:"cpuUsedPct"`
	MemUsed       uint64  `json:"memUsed"`
	MemTotal      uint64  `json:"memTotal"`
	MemCache      uint64  `json:"memCache"`
	DiskUsed      uint64  `json:"diskUsed"`
	DiskTotal     uint64  `json:"diskTotal"`
}

// errorBody is E2B's error: code is the HTTP status.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rfc3339 writes t as E2B does.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// atoiOr reads a decimal query value, def when empty.
func atoiOr(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	return strconv.Atoi(s)
}
