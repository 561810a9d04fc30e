package envd

// envd's HTTP routes of the sandbox's state (envd 0.6):
//
//	GET  /envs     the sandbox's own variables (sandbox::env::list's env:
//	               the create's envVars and what was set since)
//	GET  /metrics  sandbox::metrics as envd's Metrics
//	POST /init     envVars added through sandbox::env::set; 204
//
// Errors are the file routes' {code, message}.

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// maxInitBytes bounds a POST /init body.
const maxInitBytes = 1 << 20

// metrics is envd's Metrics.
type metrics struct {
	TS          int64   `json:"ts"`
	CPUCount    uint32  `json:"cpu_count"`
	CPUUsedPct  float64 `json:"cpu_used_pct"`
	MemTotal    uint64  `json:"mem_total"`
	MemUsed     uint64  `json:"mem_used"`
	MemTotalMiB uint64  `json:"mem_total_mib"`
	MemUsedMiB  uint64  `json:"mem_used_mib"`
	DiskUsed    uint64  `json:"disk_used"`
	DiskTotal   uint64  `json:"disk_total"`
}

// initBody is envd's POST /init. hutch's sandbox keeps its clock, network
// and tokens itself: of the rest, envVars is served, and a default user,
// workdir or access token is refused, not silently dropped.
type initBody struct {
	EnvVars        map[string]string `json:"envVars"`
	AccessToken    *string           `json:"accessToken"`
	DefaultUser    *string           `json:"defaultUser"`
	DefaultWorkdir *string           `json:"defaultWorkdir"`
	Timestamp      *string           `json:"timestamp"`
	HyperloopIP    *string           `json:"hyperloopIP"`
}

func (s *server) envs(w http.ResponseWriter, r *http.Request) {
	sc, err := scopeOf(r.Header, "")
	if err != nil {
		s.fileError(w, err)
		return
	}
	res, err := call[api.EnvResponse](r.Context(), s.t, api.FnEnvList, api.EnvListRequest{SandboxID: sc.sandbox})
	if err != nil {
		s.fileError(w, err)
		return
	}
	out := res.Env
	if out == nil {
		out = map[string]string{}
	}
	writeJSON(w, out)
}

func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	sc, err := scopeOf(r.Header, "")
	if err != nil {
		s.fileError(w, err)
		return
	}
	m, err := call[api.MetricsResponse](r.Context(), s.t, api.FnMetrics, api.MetricsRequest{SandboxID: sc.sandbox})
	if err != nil {
		s.fileError(w, err)
		return
	}
	writeJSON(w, metrics{TS: time.Now().Unix(), CPUCount: m.CPUs, CPUUsedPct: m.CPUPercent(),
		MemTotal: m.MemoryLimitBytes, MemUsed: m.MemoryBytes, MemTotalMiB: m.MemoryLimitBytes >> 20, MemUsedMiB: m.MemoryBytes >> 20,
		DiskUsed: m.DiskBytes, DiskTotal: m.DiskLimitBytes})
}

func (s *server) initEnvd(w http.ResponseWriter, r *http.Request) {
	sc, err := scopeOf(r.Header, "")
	if err != nil {
		s.fileError(w, err)
		return
	}
	var in initBody
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInitBytes))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &in)
	}
	switch {
	case err != nil:
		s.fileError(w, invalid("POST /init body (JSON, at most %d bytes): %v", maxInitBytes, err))
		return
	case in.AccessToken != nil || in.DefaultUser != nil || in.DefaultWorkdir != nil:
		s.fileError(w, invalid("hutch's envd takes envVars at /init; its access tokens are the control plane's, "+
			"and a command's user and cwd are given per command"))
		return
	}
	if len(in.EnvVars) > 0 {
		env := make(api.Env, 0, len(in.EnvVars))
		for _, k := range slices.Sorted(maps.Keys(in.EnvVars)) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				s.fileError(w, invalid("envVars: %q is not a variable name", safetext.Clip(k, 64)))
				return
			}
			env = append(env, k+"="+in.EnvVars[k])
		}
		if _, err := call[api.EnvResponse](r.Context(), s.t, api.FnEnvSet, api.EnvSetRequest{SandboxID: sc.sandbox, Env: env}); err != nil {
			s.fileError(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeJSON answers v with 200.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
