package sandbox

import (
	"context"
	"sync"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/netplumb"
)

// What the core offers interpsvc: HostURL asks the sandboxes' networking
// (networksvc.Net.HostURL) how a sandbox with a network reaches the
// host's loopback, OnTeardown tells a service the sandboxes the core tore
// down.

func TestHandleHostURL(t *testing.T) {
	ctx := context.Background()
	fw := &fakeNetwork{attached: map[string]netplumb.Egress{}, set: map[string][]netplumb.Egress{}}
	m, _, _ := inprocessWith(t, nil, func(o *Options) { o.Network = fw })
	for _, network := range []bool{true, false} {
		id := create(t, m, api.CreateRequest{Image: "python", Network: network})
		h, release, err := m.Acquire(ctx, id, UseRecord)
		if err != nil {
			t.Fatal(err)
		}
		local := "http://127.0.0.1:3141/simple"
		want := local
		if network {
			want = fw.HostURL(id, local)
		}
		if got := h.HostURL(local); got != want || (network && got == local) {
			t.Errorf("network %v: HostURL(%q) = %q, want %q", network, local, got, want)
		}
		release()
	}
}

func TestOnTeardown(t *testing.T) {
	ctx := context.Background()
	m, _, _ := inprocess(t, nil)
	var mu sync.Mutex
	var torn []string
	m.OnTeardown(func(id string) {
		mu.Lock()
		torn = append(torn, id)
		mu.Unlock()
	})
	running := create(t, m, api.CreateRequest{Image: "python"})
	stopped := create(t, m, api.CreateRequest{Image: "python"})
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: stopped, Wait: true}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(torn) != 1 || torn[0] != stopped {
		t.Fatalf("torn down %v, want [%s] (not %s, running)", torn, stopped, running)
	}
}
