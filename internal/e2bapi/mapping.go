package e2bapi

// Mapping between E2B's payloads and the function table's: each field
// once, in both directions.

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// E2B's states of a sandbox, and hutch's states under each (stopping
// and stopped sandboxes are gone to E2B). A checkpointing sandbox is
// being paused to disk or snapshotted, which E2B does paused.
var e2bStates = map[string][]string{
	"running": {"running", "resuming"},
	"paused":  {"paused", "pausing", "checkpointing"},
}

// stateOf is the E2B state of a hutch state; "" is gone.
func stateOf(hutch string) string {
	for e2b, states := range e2bStates {
		if slices.Contains(states, hutch) {
			return e2b
		}
	}
	return ""
}

// templateKey is the metadata key that keeps the E2B template id a
// sandbox was created from, so that getInfo and list answer the id create
// did (several ids may name one image) and list filters by it. E2B's
// answers leave it out of the metadata; hutch's own API shows it.
const templateKey = "e2b.templateID"

// createRequest maps a create body onto sandbox::create; image or
// template is the templateID's (resolved by the caller).
func createRequest(in newSandbox, image, template string) (api.CreateRequest, error) {
	req := api.CreateRequest{Image: image, Template: template, Metadata: in.Metadata}
	if in.TemplateID != "" {
		req.Metadata = maps.Clone(in.Metadata)
		if req.Metadata == nil {
			req.Metadata = map[string]string{}
		}
		req.Metadata[templateKey] = in.TemplateID
	}
	for _, k := range slices.Sorted(maps.Keys(in.EnvVars)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return api.CreateRequest{}, errdefs.Malformed("envVars: %q is not a variable name", safetext.Clip(k, 64))
		}
		req.Env = append(req.Env, k+"="+in.EnvVars[k])
	}
	var timeout uint64
	if in.Timeout != nil {
		if *in.Timeout == 0 {
			return api.CreateRequest{}, errdefs.Malformed("timeout must be at least 1 second")
		}
		timeout = *in.Timeout
	}
	// E2B counts a sandbox's life from its create (or its last
	// setTimeout or resume), never its idleness: the timeout is hutch's
	// lifetime, and the idle timeout the longest there is. With autoPause
	// the end of the lifetime pauses it (on_idle applies to both).
	req.TimeoutSecs = timeout
	if timeout > 0 {
		req.IdleTimeoutSecs = config.MaxIdleTimeoutSecs
	}
	if in.AutoPause {
		req.OnIdle = api.OnIdlePause
		if in.AutoPauseMemory != nil && !*in.AutoPauseMemory {
			req.OnIdle = api.OnIdlePauseFiles
		}
	}
	req.AutoResume = in.AutoResume != nil && in.AutoResume.Enabled
	if in.AllowInternetAccess != nil {
		req.Network = *in.AllowInternetAccess
	}
	egress, err := in.Network.egress() // issue 37: rules, and what hutch refuses
	if err != nil {
		return api.CreateRequest{}, err
	}
	if egress != nil {
		req.Network = true
		req.Egress = egress
	}
	req.Preview = in.Network.preview() // issue 37: allowPublicTraffic, maskRequestHost (preview.go)
	return req, nil
}

// listed is the E2B entry of a hutch sandbox.
func listed(s api.SandboxInfo) listedSandbox {
	started, _ := time.Parse(time.RFC3339Nano, s.CreatedAt)
	end := started.Add(time.Duration(s.IdleTimeoutSecs) * time.Second)
	if t, err := time.Parse(time.RFC3339Nano, s.ExpiresAt); err == nil {
		end = t
	}
	md := maps.Clone(s.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	templateID := s.Image
	if t, ok := md[templateKey]; ok {
		templateID = t
		delete(md, templateKey)
	}
	var alias string
	if s.Name != nil {
		alias = *s.Name
	}
	return listedSandbox{SandboxID: s.SandboxID, TemplateID: templateID, Alias: alias, ClientID: clientID,
		StartedAt: rfc3339(started), EndAt: rfc3339(end), State: stateOf(s.State), CPUCount: s.CPUs,
		MemoryMB: s.MemoryMB, EnvdVersion: EnvdVersion, Metadata: md}
}

// detail is the E2B description of a hutch sandbox.
func detail(s api.SandboxInfo, envdToken, domain string) sandboxDetail {
	d := sandboxDetail{listedSandbox: listed(s), EnvdAccessToken: envdToken, Domain: domain,
		AllowInternetAccess: s.Network, Lifecycle: lifecycle{OnTimeout: "kill", AutoResume: s.AutoResume}}
	if s.OnIdle == api.OnIdlePause || s.OnIdle == api.OnIdlePauseFiles {
		d.Lifecycle.OnTimeout = "pause"
	}
	d.Network = networkOf(s)                   // issue 37: egress and preview terms (preview.go)
	d.VolumeMounts = volumeMountsOf(s.Volumes) // issue 40 (parity.go)
	return d
}

// Bounds of a list query.
const (
	defaultListLimit = 100
	maxListLimit     = 100
	maxMetadataPairs = 64
)

// listRequest maps GET /v2/sandboxes's query onto sandbox::list.
func listRequest(q url.Values) (api.ListRequest, error) {
	var req api.ListRequest
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			states, ok := e2bStates[st]
			if !ok {
				return req, errdefs.Malformed("state must be running or paused, got %q", safetext.Clip(st, 64))
			}
			req.State = append(req.State, states...)
		}
	}
	if len(req.State) == 0 {
		req.State = append(slices.Clone(e2bStates["running"]), e2bStates["paused"]...)
	}
	if raw := q.Get("metadata"); raw != "" {
		pairs, err := url.ParseQuery(raw)
		if err != nil || len(pairs) > maxMetadataPairs {
			return req, errdefs.Malformed("metadata must be key=value pairs joined by & (at most %d)", maxMetadataPairs)
		}
		req.Metadata = map[string]string{}
		for k, v := range pairs {
			req.Metadata[k] = v[0]
		}
	}
	if t := q.Get("template"); t != "" {
		if req.Metadata == nil {
			req.Metadata = map[string]string{}
		}
		req.Metadata[templateKey] = t
	}
	switch q.Get("order") {
	case "", "desc":
		req.NewestFirst = true
	case "asc":
	default:
		return req, errdefs.Malformed("order must be asc or desc, got %q", safetext.Clip(q.Get("order"), 64))
	}
	req.CreatedAfter, req.CreatedBefore = q.Get("startedAfter"), q.Get("startedBefore")
	limit, err := atoiOr(q.Get("limit"), defaultListLimit)
	if err != nil || limit < 1 || limit > maxListLimit {
		return req, errdefs.Malformed("limit must be between 1 and %d", maxListLimit)
	}
	req.Limit, req.NextToken = limit, q.Get("nextToken")
	return req, nil
}

// metrics is the E2B metric of sample sm of a sandbox whose limits m
// gives.
func metrics(m api.MetricsResponse, sm api.MetricsSample) metric {
	t, _ := time.Parse(time.RFC3339Nano, sm.Time)
	return metric{Timestamp: rfc3339(t), TimestampUnix: t.Unix(), CPUCount: m.CPUs, CPUUsedPct: sm.CPUPercent,
		MemUsed: sm.MemoryBytes, MemTotal: m.MemoryLimitBytes, DiskUsed: sm.DiskBytes, DiskTotal: m.DiskLimitBytes}
}
