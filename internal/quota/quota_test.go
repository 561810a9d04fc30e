package quota_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/quota"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// TestTwoOwnersOneFlooding: owner "flood" sends many creates at once
// against a quota of 2 sandboxes and 3 cpus while "bob" creates under the
// default quota. Exactly what fits is created; the rest is S401 naming the
// limit and its use; bob's creates all succeed; sandbox::quota shows each
// owner's use against its limits.
func TestTwoOwnersOneFlooding(t *testing.T) {
	cfg := config.Default()
	cfg.WarmPoolAuto = false
	cfg.Quota = config.Quota{
		Default: config.QuotaLimits{Sandboxes: 3},
		Owners:  map[string]config.QuotaLimits{"flood": {Sandboxes: 2, CPUs: 3}},
	}
	mgr := sandboxtest.NewManager(t, sandbox.Options{Config: cfg})
	deps := functions.Deps{Sandboxes: mgr}
	deps.Quota = quota.New(&cfg, deps)
	table := functions.New(deps)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	call := func(owner, fn string, req any) (any, error) {
		return functions.Invoke(auth.WithOwner(ctx, owner), table, fn, req)
	}
	const floods = 8
	var wg sync.WaitGroup
	errs := make([]error, floods)
	for i := range floods {
		wg.Go(func() { _, errs[i] = call("flood", api.FnCreate, api.CreateRequest{Image: "python"}) })
	}
	var bobErrs [3]error
	for i := range bobErrs {
		wg.Go(func() { _, bobErrs[i] = call("bob", api.FnCreate, api.CreateRequest{Image: "python"}) })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case errdefs.CodeOf(err) != errdefs.CodeQuota:
			t.Errorf("flood's create: %v, want success or S401", err)
		}
	}
	if created != 2 {
		t.Errorf("flood created %d sandboxes under a quota of 2", created)
	}
	for _, err := range bobErrs {
		if err != nil {
			t.Errorf("bob's create while flood was at its limit: %v", err)
		}
	}
	_, err := call("flood", api.FnCreate, api.CreateRequest{Image: "python"})
	if e := errdefs.As(err); e.Code != errdefs.CodeQuota || !strings.Contains(e.Message, "quota.owners.flood.sandboxes = 2: 2 used") {
		t.Errorf("create past the sandboxes limit: %v", err)
	}
	// With one sandbox stopped, more cpus than are left: refused by the
	// cpus limit, the message naming it.
	list, err := call("flood", api.FnList, api.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call("flood", api.FnStop, api.StopRequest{SandboxID: list.(api.ListResponse).Sandboxes[0].SandboxID}); err != nil {
		t.Fatal(err)
	}
	_, err = call("flood", api.FnCreate, api.CreateRequest{Image: "python", CPUs: 3})
	if e := errdefs.As(err); e.Code != errdefs.CodeQuota || !strings.Contains(e.Message, "quota.owners.flood.cpus = 3: 1 used, the call adds 3") {
		t.Errorf("create past the cpus limit: %v", err)
	}
	usage := func(owner string) map[string]api.QuotaItem {
		res, err := call(owner, api.FnQuota, api.QuotaRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]api.QuotaItem{}
		for _, it := range res.(api.QuotaResponse).Items {
			out[it.Name] = it
		}
		return out
	}
	if u := usage("flood")["sandboxes"]; u.Used != 1 || u.Limit != 2 || u.Key != "quota.owners.flood.sandboxes" {
		t.Errorf("flood's sandboxes: %+v", u)
	}
	if u := usage("flood")["cpus"]; u.Used != 1 || u.Limit != 3 {
		t.Errorf("flood's cpus: %+v", u)
	}
	if u := usage("bob")["sandboxes"]; u.Used != 3 || u.Limit != 3 || u.Key != "quota.default.sandboxes" {
		t.Errorf("bob's sandboxes: %+v", u)
	}
}
