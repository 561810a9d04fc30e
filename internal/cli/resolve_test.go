package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// TestSandboxRefs checks that commands take a sandbox's name or a unique
// prefix of its id, and refuse an ambiguous one naming the candidates.
func TestSandboxRefs(t *testing.T) {
	name := func(s string) *string { return &s }
	const (
		web  = "0a1b2c3d-0000-4000-8000-000000000001"
		db   = "0a1b9999-0000-4000-8000-000000000002"
		old  = "7f000000-0000-4000-8000-000000000003"
		twin = "7f111111-0000-4000-8000-000000000004"
	)
	sandboxes := []api.SandboxInfo{
		{SandboxID: web, Name: name("web"), State: "running"},
		{SandboxID: db, Name: name("db"), State: "running"},
		{SandboxID: old, Name: name("agent"), Stopped: true},
		{SandboxID: twin, Name: name("agent"), State: "paused"},
	}
	newFake := func() *functionstest.Fake {
		return &functionstest.Fake{ListFunc: func(context.Context, api.ListRequest) (api.ListResponse, error) {
			return api.ListResponse{Sandboxes: sandboxes}, nil
		}}
	}
	for _, tt := range []struct {
		args []string
		want []string // the ids stopped
	}{
		{[]string{"stop", "web"}, []string{web}},
		{[]string{"stop", "0a1b2"}, []string{web}},
		{[]string{"stop", "--wait", "db", "0a1b2c", web}, []string{db, web, web}},
		// Of two sandboxes of one name, the one not stopped.
		{[]string{"stop", "agent"}, []string{twin}},
		// A name wins over an id prefix.
		{[]string{"stop", "7f0"}, []string{old}},
	} {
		fake := newFake()
		out, errOut, code := newHarness(t, fake).run("", tt.args...)
		var got []string
		for _, c := range fake.CallsOf("Stop") {
			got = append(got, c.Req.(api.StopRequest).SandboxID)
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q stopped %q, want %q (code %d, stdout %q, stderr %q)", tt.args, got, tt.want, code, out, errOut)
		}
	}

	// A full id is used without a listing.
	fake := newFake()
	if _, errOut, code := newHarness(t, fake).run("", "stop", web); code != 0 || len(fake.CallsOf("List")) != 0 {
		t.Errorf("stop by full id: code %d, %d listings, stderr %q", code, len(fake.CallsOf("List")), errOut)
	}

	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"stop", "0a1b"}, []string{`2 sandboxes have ids that start with "0a1b"`, web + " web (running)", db + " db (running)"}},
		{[]string{"exec", "0a1b", "--", "true"}, []string{`2 sandboxes have ids that start with "0a1b"`}},
		{[]string{"pause", "0a", "--hibernate"}, []string{"0a1b"}},
		{[]string{"job", "ls", "--sandbox", "0a"}, []string{"--sandbox: 2 sandboxes"}},
		// What matches nothing fails before anything is done.
		{[]string{"stop", "web", "nosuch"}, []string{`no sandbox has the name or id prefix "nosuch"`}},
	} {
		fake := newFake()
		out, errOut, code := newHarness(t, fake).run("", tt.args...)
		if code == 0 || out != "" || len(fake.Calls()) != len(fake.CallsOf("List")) {
			t.Errorf("%q: code %d, stdout %q, calls %v: want a failure before any call but the listing", tt.args, code, out, fake.Calls())
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr %q lacks %q", tt.args, errOut, w)
			}
		}
	}
}
