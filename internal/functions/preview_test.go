package functions

import (
	"context"
	"errors"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// fakeTerms is a port service that keeps the terms it is given, or
// refuses them with err.
type fakeTerms struct {
	Ports
	set map[string]api.PreviewOptions
	err error
}

func (f *fakeTerms) CheckPreview(o api.PreviewOptions) error {
	if o.HostHeader == "bad" {
		return errdefs.Malformed("bad host_header")
	}
	return nil
}

func (f *fakeTerms) SetPreview(_ context.Context, id string, o api.PreviewOptions) error {
	if f.err != nil {
		return f.err
	}
	f.set[id] = o
	return nil
}

func (f *fakeTerms) Preview(id string) api.PreviewOptions { return f.set[id] }

// TestCreatePreview: sandbox::create gives its preview terms to the port
// service once made, and sandbox::get answers them; bad terms, or a
// daemon without previews, make nothing.
func TestCreatePreview(t *testing.T) {
	ctx := context.Background()
	terms := &api.PreviewOptions{HostHeader: "app.test:${PORT}", Private: true}
	sb := &fakeSandboxes{}
	ports := &fakeTerms{set: map[string]api.PreviewOptions{}}
	tab := New(Deps{Sandboxes: sb, Ports: ports})
	if _, err := Call[api.CreateResponse](ctx, tab, api.FnCreate, api.CreateRequest{Image: "python", Preview: terms}); err != nil || ports.set["id"] != *terms {
		t.Fatalf("create: %v, terms %+v", err, ports.set)
	}
	if info, err := Call[api.SandboxInfo](ctx, tab, api.FnGet, api.GetRequest{SandboxID: "id"}); err != nil || info.Preview == nil || *info.Preview != *terms {
		t.Errorf("get: %+v %v", info.Preview, err)
	}
	sb.create = api.CreateRequest{}
	if _, err := Call[api.CreateResponse](ctx, tab, api.FnCreate, api.CreateRequest{Image: "python", Preview: &api.PreviewOptions{HostHeader: "bad"}}); !errdefs.Is(err, errdefs.CodeMalformed) || sb.create.Image != "" {
		t.Errorf("bad terms: %v, created %+v", err, sb.create)
	}
	ports.err = errors.New("gone")
	if _, err := Call[api.CreateResponse](ctx, tab, api.FnCreate, api.CreateRequest{Image: "python", Preview: terms}); err == nil {
		t.Error("terms the port service refused: no error")
	}
	bare := New(Deps{Sandboxes: &fakeSandboxes{}})
	if _, err := Call[api.CreateResponse](ctx, bare, api.FnCreate, api.CreateRequest{Image: "python", Preview: terms}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("no previews: %v, want S001", err)
	}
}

// fakeFork forks into copies "a" and "b".
type fakeFork struct{ Snapshots }

func (fakeFork) Fork(context.Context, api.ForkRequest) (api.ForkResponse, error) {
	return api.ForkResponse{SandboxIDs: []string{"a", "b"}}, nil
}

// TestForkPreview: each copy of a fork gets its source's preview terms;
// a source without terms gives none, and copies that cannot take them
// fail the fork.
func TestForkPreview(t *testing.T) {
	ctx := context.Background()
	terms := api.PreviewOptions{HostHeader: "app.test", Private: true}
	ports := &fakeTerms{set: map[string]api.PreviewOptions{"src": terms}}
	tab := New(Deps{Sandboxes: &fakeSandboxes{}, Ports: ports, Snapshots: fakeFork{}})
	if res, err := Call[api.ForkResponse](ctx, tab, api.FnFork, api.ForkRequest{SandboxID: "src"}); err != nil || len(res.SandboxIDs) != 2 {
		t.Fatalf("fork: %+v %v", res, err)
	}
	if ports.set["a"] != terms || ports.set["b"] != terms {
		t.Errorf("copies' terms: %+v", ports.set)
	}
	if _, err := Call[api.ForkResponse](ctx, tab, api.FnFork, api.ForkRequest{SandboxID: "plain"}); err != nil {
		t.Fatal(err)
	}
	ports.err = errors.New("gone")
	if _, err := Call[api.ForkResponse](ctx, tab, api.FnFork, api.ForkRequest{SandboxID: "src"}); err == nil {
		t.Error("copies that could not take the terms: no error")
	}
}
