package sandbox

import (
	"context"
	"errors"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// TestNetworkServiceLifecycle: the manager, not the runtime, has a
// sandbox's network made (Options.Network): it attaches it before the
// runtime starts (the spec
// carries the attachment), detaches it after the runtime destroyed the
// sandbox, and after a failed start; without a network service, network:
// true and sandbox networks are refused with S302.
func TestNetworkServiceLifecycle(t *testing.T) {
	ctx := context.Background()
	t.Run("without a service", func(t *testing.T) {
		m, _, _ := inprocess(t, nil)
		_, err := m.Create(ctx, api.CreateRequest{Image: "python", Network: true})
		wantCode(t, err, errdefs.CodeUnsupported)
		err = checkNetwork(&api.CreateRequest{Network: true}, m.net) // what a network create asks
		wantCode(t, err, errdefs.CodeUnsupported)
	})

	fw := &fakeNetwork{attached: map[string]netplumb.Egress{}, set: map[string][]netplumb.Egress{}}
	m, rt, _ := inprocessWith(t, nil, func(o *Options) { o.Network = fw })
	var started *runtime.NetworkAttachment
	rt.BeforeStart(func(_ context.Context, spec runtime.Spec) error {
		started = spec.Network
		return nil
	})
	id := create(t, m, api.CreateRequest{Image: "python", Network: true})
	if got := fw.Attachment(id); started == nil || got == nil || *started != *got {
		t.Fatalf("the runtime started with network %+v, want the service's attachment %+v", started, fw.Attachment(id))
	}
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	if _, attached := fw.egressOf(id); attached {
		t.Error("the network of a stopped sandbox was not detached")
	}
	plain := create(t, m, api.CreateRequest{Image: "python"})
	if started != nil || fw.Attachment(plain) != nil {
		t.Errorf("a sandbox without network: true got one: %+v", started)
	}

	rt.BeforeStart(func(context.Context, runtime.Spec) error { return errors.New("injected start failure") })
	if _, err := m.Create(ctx, api.CreateRequest{Image: "python", Network: true}); err == nil {
		t.Fatal("create with a failing runtime succeeded")
	}
	fw.mu.Lock()
	left := len(fw.attached)
	fw.mu.Unlock()
	if left != 0 {
		t.Errorf("%d networks left attached after a failed start", left)
	}
}
