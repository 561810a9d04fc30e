// Package adoptsvc takes over, for a restarted daemon's sandbox manager, a
// sandbox that outlived the daemon that started it (issue 35): a cluster
// node's Pod sandbox started with runtime.Spec.Reattach. It is a leaf: the
// core calls it from its startup load and makes a live sandbox of what it
// returns.
package adoptsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Sandbox is what a sandbox's record names: its id and its image, by
// name and by the id it booted on; its network, if it has one, and its
// egress policy.
type Sandbox struct {
	ID, Image, ImageID string
	Network            bool
	Egress             *api.EgressPolicy
}

// Network is the sandboxes' networking (the core's SandboxNetwork).
type Network interface {
	// Readopt takes over the network of sandbox id, which outlived its
	// daemon, with its egress policy pol (nil: none).
	Readopt(ctx context.Context, id string, pol *egress.Policy) error
	// Detach tears sandbox id's network down; it is idempotent and logs
	// its failures.
	Detach(id string)
}

// Deps are the manager's parts an adoption uses.
type Deps struct {
	// Ensure finds an image in the cache (install: false).
	Ensure func(ctx context.Context, name string, install bool) (*image.Image, error)
	// Connect dials the agent of an instance as user and waits for it.
	Connect func(ctx context.Context, inst runtime.Instance, user *image.User) (*agentclient.Client, error)
	// Net takes a networked sandbox's network over; nil: none.
	Net Network
	// Timeout bounds the adoption, as a boot is bounded.
	Timeout time.Duration
	// Log receives why a sandbox was not adopted.
	Log *slog.Logger
}

// Adopted is a sandbox taken over: its image and user, its instance and
// a connected agent.
type Adopted struct {
	Image *image.Image
	User  *image.User
	Inst  runtime.Instance
	Agent *agentclient.Client
}

// Adopt takes over sb on rt, a runtime.Adopter, and tells whether it
// did; why not is logged. Its image must still be the one it booted on.
// A networked sandbox's network is taken over too (Deps.Net). On failure
// nothing is changed but an adopted instance, destroyed again when its
// agent does not answer or its network cannot be taken over, and that
// network, torn down.
func Adopt(ctx context.Context, rt runtime.Runtime, sb Sandbox, d Deps) (Adopted, bool) {
	got, err := adopt(ctx, rt, sb, d)
	if err != nil {
		d.Log.Warn("a sandbox of an earlier daemon could not be adopted", "sandbox", sb.ID, "err", err)
		return Adopted{}, false
	}
	d.Log.Info("adopted a sandbox of an earlier daemon", "sandbox", sb.ID)
	return got, true
}

func adopt(ctx context.Context, rt runtime.Runtime, sb Sandbox, d Deps) (Adopted, error) {
	a, ok := rt.(runtime.Adopter)
	if !ok {
		return Adopted{}, fmt.Errorf("runtime %s cannot adopt sandboxes", rt.Name())
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	img, err := d.Ensure(ctx, sb.Image, false)
	if err != nil {
		return Adopted{}, err
	}
	if img.ID != sb.ImageID {
		return Adopted{}, fmt.Errorf("image %s changed since the sandbox booted", sb.Image)
	}
	user, err := spec.ImageUser(img)
	if err != nil {
		return Adopted{}, err
	}
	inst, err := a.Adopt(ctx, sb.ID)
	if err != nil {
		return Adopted{}, err
	}
	ac, err := d.Connect(ctx, inst, user)
	if err == nil && sb.Network {
		if err = readopt(ctx, sb, d.Net); err != nil {
			_ = ac.Close()
		}
	}
	if err != nil {
		err = errors.Join(err, inst.Destroy(ctx))
		if sb.Network && d.Net != nil {
			d.Net.Detach(sb.ID)
		}
		return Adopted{}, err
	}
	return Adopted{Image: img, User: user, Inst: inst, Agent: ac}, nil
}

// readopt takes sb's network over with net.
func readopt(ctx context.Context, sb Sandbox, net Network) error {
	if net == nil {
		return errors.New("this daemon has no network service for the sandbox's network")
	}
	// As a boot's: a policy its record holds that no longer compiles
	// fails closed.
	return net.Readopt(ctx, sb.ID, egress.MustCompile(sb.Egress))
}
