package gvisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Reconcile destroys every sandbox of this runtime that keep rejects. A
// sandbox is found by any trace under StateDir: runsc state, a bundle
// directory, or a mount below the bundle directories. Its
// cgroups are removed with it. Sandboxes this Runtime is starting right now
// are left alone; live ones it started are destroyed through their
// instance, so their Done closes. When no sandbox of this Runtime is left,
// it also unmounts runsc's shared null network namespace. It returns the ids it destroyed, sorted.
//
// Cgroups under hutch/ with no trace under StateDir are not touched: they
// cannot be told apart from another runtime's (another daemon, another
// state directory) on the same host. Because teardown removes the bundle
// directory last, an interrupted teardown always leaves that trace.
func (r *Runtime) Reconcile(ctx context.Context, keep func(id string) bool) ([]string, error) {
	ids, err := r.knownIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconciling gvisor sandboxes: %w", err)
	}
	var destroyed []string
	var errs []error
	for _, id := range ids {
		if keep(id) {
			continue
		}
		r.mu.Lock()
		inst, tracked := r.live[id]
		r.mu.Unlock()
		switch {
		case tracked && inst == nil:
			continue // being started
		case tracked:
			err = inst.Destroy(ctx)
		default:
			err = r.teardown(ctx, id)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("destroying sandbox %s: %w", id, err))
			continue
		}
		destroyed = append(destroyed, id)
	}
	r.mu.Lock()
	if len(r.live) == 0 {
		// A crashed daemon's runsc left its shared mount behind.
		if err := r.releaseSharedLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	r.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return destroyed, fmt.Errorf("reconciling gvisor sandboxes: %w", err)
	}
	return destroyed, nil
}

// knownIDs lists, sorted and without duplicates, the ids of every sandbox
// with a trace under StateDir.
func (r *Runtime) knownIDs(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	listed, err := r.runscList(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range listed {
		set[id] = true
	}
	entries, err := os.ReadDir(r.sandboxesDir())
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range entries {
		set[e.Name()] = true
	}
	mps, err := mountsUnder(r.sandboxesDir())
	if err != nil {
		return nil, err
	}
	prefix := r.sandboxesDir() + "/"
	for _, mp := range mps {
		if rest, ok := strings.CutPrefix(mp, prefix); ok {
			set[strings.SplitN(rest, "/", 2)[0]] = true
		}
	}
	var ids []string
	for id := range set {
		// Ignore anything this runtime could not have created.
		if checkID(id) == nil && filepath.Base(id) == id {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
