package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestListFilter: the filter keeps the states and metadata asked for; an
// unknown state, a bad limit or bad metadata is S001.
func TestListFilter(t *testing.T) {
	states := []string{"running", "paused", "stopped"}
	keep, err := ListFilter(api.ListRequest{State: []string{"paused"}, Metadata: map[string]string{"team": "a"}}, states)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		info api.SandboxInfo
		want bool
	}{
		{api.SandboxInfo{State: "paused", Metadata: map[string]string{"team": "a", "x": "y"}}, true},
		{api.SandboxInfo{State: "running", Metadata: map[string]string{"team": "a"}}, false},
		{api.SandboxInfo{State: "paused", Metadata: map[string]string{"team": "b"}}, false},
		{api.SandboxInfo{State: "paused"}, false},
	} {
		if got := keep(tt.info); got != tt.want {
			t.Errorf("keep(%+v) = %v, want %v", tt.info, got, tt.want)
		}
	}
	for name, req := range map[string]api.ListRequest{
		"state":    {State: []string{"sleeping"}},
		"limit":    {Limit: maxListLimit + 1},
		"negative": {Limit: -1},
		"metadata": {Metadata: map[string]string{"-": "v"}},
		"after":    {CreatedAfter: "yesterday"},
		"before":   {CreatedBefore: "2026-13-01T00:00:00Z"},
	} {
		if _, err := ListFilter(req, states); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%s: %v, want S001", name, err)
		}
	}
}

// TestListCreatedBetween: created_after and created_before keep the
// sandboxes created strictly between them.
func TestListCreatedBetween(t *testing.T) {
	keep, err := ListFilter(api.ListRequest{CreatedAfter: "2026-01-01T00:00:00Z", CreatedBefore: "2026-01-02T00:00:00.5Z"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for created, want := range map[string]bool{
		"2026-01-01T00:00:00Z": false, "2026-01-01T00:00:00.001Z": true, "2026-01-02T00:00:00.4Z": true,
		"2026-01-02T00:00:00.5Z": false, "": false,
	} {
		if got := keep(api.SandboxInfo{CreatedAt: created}); got != want {
			t.Errorf("created %q: keep = %v, want %v", created, got, want)
		}
	}
	a, b := PageKey{Created: time.Unix(1, 0), ID: "a"}, PageKey{Created: time.Unix(2, 0), ID: "b"}
	if !a.Precedes(b, false) || b.Precedes(a, false) || !b.Precedes(a, true) || a.Precedes(b, true) {
		t.Error("Precedes: oldest first unless newest first")
	}
}

// TestPageToken: a token reads back to its key, keys order by creation
// then id, and a token no list answered is S001.
func TestPageToken(t *testing.T) {
	k := PageKey{Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), ID: "0b3a6c4e-2f1d-4e8a-9c7b-5d6e7f8a9b0c"}
	got, err := ParsePageToken(k.Token())
	if err != nil || !got.Created.Equal(k.Created) || got.ID != k.ID {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, k)
	}
	if start, err := ParsePageToken(""); start != nil || err != nil {
		t.Errorf(`"" = %+v, %v; want the start`, start, err)
	}
	later := PageKey{Created: k.Created.Add(time.Second), ID: "0"}
	if !k.Less(later) || later.Less(k) || !k.Less(PageKey{Created: k.Created, ID: k.ID + "x"}) {
		t.Error("keys do not order by creation, then id")
	}
	for _, tok := range []string{"!!", "bm8gc3BhY2U", (PageKey{Created: k.Created, ID: "not-a-uuid"}).Token()} {
		if _, err := ParsePageToken(tok); !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), "next_token") {
			t.Errorf("token %q: %v, want S001 naming next_token", tok, err)
		}
	}
}
