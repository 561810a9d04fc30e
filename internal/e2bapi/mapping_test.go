package e2bapi

import (
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
)

func u64(v uint64) *uint64 { return &v }
func yes() *bool           { v := true; return &v }

func TestCreateRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      newSandbox
		want    api.CreateRequest
		wantErr bool
	}{
		{"timeout is the lifetime, env sorted", newSandbox{TemplateID: "base", Timeout: u64(300), EnvVars: map[string]string{"B": "2", "A": "1"}, Metadata: map[string]string{"k": "v"}},
			api.CreateRequest{Image: "python", TimeoutSecs: 300, IdleTimeoutSecs: config.MaxIdleTimeoutSecs, Env: api.Env{"A=1", "B=2"}, Metadata: map[string]string{"k": "v", templateKey: "base"}}, false},
		{"autoPause pauses at the end of the lifetime", newSandbox{TemplateID: "base", Timeout: u64(60), AutoPause: true, AutoResume: &struct {
			Enabled bool `json:"enabled"`
		}{true}},
			api.CreateRequest{Image: "python", TimeoutSecs: 60, IdleTimeoutSecs: config.MaxIdleTimeoutSecs, OnIdle: api.OnIdlePause, AutoResume: true, Metadata: map[string]string{templateKey: "base"}}, false},
		{"autoPauseMemory false pauses to the files only", newSandbox{TemplateID: "base", Timeout: u64(60), AutoPause: true, AutoPauseMemory: new(false)},
			api.CreateRequest{Image: "python", TimeoutSecs: 60, IdleTimeoutSecs: config.MaxIdleTimeoutSecs, OnIdle: api.OnIdlePauseFiles, Metadata: map[string]string{templateKey: "base"}}, false},
		{"internet", newSandbox{AllowInternetAccess: yes()}, api.CreateRequest{Image: "python", Network: true}, false},
		{"egress", newSandbox{Network: &networkConfig{AllowOut: []string{"pypi.org"}}},
			api.CreateRequest{Image: "python", Network: true, Egress: &api.EgressPolicy{AllowOut: []string{"pypi.org"}}}, false},
		{"zero timeout", newSandbox{Timeout: u64(0)}, api.CreateRequest{}, true},
		{"bad env name", newSandbox{EnvVars: map[string]string{"A=B": "1"}}, api.CreateRequest{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := createRequest(tc.in, "python", "")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestListRequest(t *testing.T) {
	for _, tc := range []struct {
		query   string
		want    api.ListRequest
		wantErr bool
	}{
		{"", api.ListRequest{State: []string{"running", "resuming", "paused", "pausing", "checkpointing"}, Limit: defaultListLimit, NewestFirst: true}, false},
		{"state=paused&limit=2&nextToken=abc", api.ListRequest{State: []string{"paused", "pausing", "checkpointing"}, Limit: 2, NextToken: "abc", NewestFirst: true}, false},
		{"state=running,paused&order=asc", api.ListRequest{State: []string{"running", "resuming", "paused", "pausing", "checkpointing"}, Limit: defaultListLimit}, false},
		{"order=desc&template=base&startedAfter=2026-01-02T03:04:05Z&startedBefore=2026-01-03T00:00:00Z", api.ListRequest{State: []string{"running", "resuming", "paused", "pausing", "checkpointing"},
			Metadata: map[string]string{templateKey: "base"}, Limit: defaultListLimit, NewestFirst: true, CreatedAfter: "2026-01-02T03:04:05Z", CreatedBefore: "2026-01-03T00:00:00Z"}, false},
		{"order=up", api.ListRequest{}, true},
		{"metadata=" + url.QueryEscape("a=1&b=x%26y"), api.ListRequest{State: []string{"running", "resuming", "paused", "pausing", "checkpointing"},
			Metadata: map[string]string{"a": "1", "b": "x&y"}, Limit: defaultListLimit, NewestFirst: true}, false},
		{"state=stopped", api.ListRequest{}, true},
		{"limit=0", api.ListRequest{}, true},
		{"limit=101", api.ListRequest{}, true},
		{"limit=x", api.ListRequest{}, true},
		{"metadata=%3B%25", api.ListRequest{}, true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			got, err := listRequest(q)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	for hutch, want := range map[string]string{"running": "running", "resuming": "running", "paused": "paused",
		"pausing": "paused", "stopping": "", "stopped": ""} {
		if got := stateOf(hutch); got != want {
			t.Errorf("stateOf(%s) = %q, want %q", hutch, got, want)
		}
	}
}

func TestConnectOnlyExtends(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := api.SandboxInfo{ExpiresAt: now.Add(10 * time.Minute).Format(time.RFC3339Nano)}
	for secs, want := range map[uint64]bool{60: false, 600: false, 601: true, 1 << 62: true} {
		if got := extends(s, secs, now); got != want {
			t.Errorf("extends(%d s) = %v, want %v", secs, got, want)
		}
	}
	if extends(api.SandboxInfo{}, 60, now) {
		t.Error("a sandbox without an end was given one")
	}
}
