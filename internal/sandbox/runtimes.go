package sandbox

import (
	"errors"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Runtimes. A daemon offers one or more isolation runtimes (runtime.Set);
// a create names one (api.CreateRequest.Runtime) or gets the default, and
// its record keeps the name: everything done to a sandbox afterwards goes
// to its own runtime and is judged by that runtime's abilities. A sandbox
// started from a snapshot starts in the snapshot's runtime. The warm pool
// holds sandboxes of the default runtime only.

// runtimeFor is the runtime of rts a create of req (from origin from, or
// nil) starts in: S001 for a name no runtime has, S302 for a runtime this host
// cannot run or that cannot start from that origin.
func runtimeFor(rts *runtime.Set, req api.CreateRequest, from *Origin) (runtime.Runtime, error) {
	name := req.Runtime
	if from != nil && from.Runtime != "" {
		if name != "" && name != from.Runtime {
			return nil, errdefs.New(errdefs.CodeMalformed, "the snapshot was taken in the %s runtime and starts only there, not in %s", from.Runtime, name).
				WithFix(map[string]any{"runtime": from.Runtime}, "leave runtime out, or name "+from.Runtime)
		}
		name = from.Runtime
	}
	rt, err := rts.Get(name)
	switch {
	case errors.Is(err, runtime.ErrUnknownRuntime):
		return nil, errdefs.New(errdefs.CodeMalformed, "%s", err.Error())
	case err != nil:
		return nil, errdefs.New(errdefs.CodeUnsupported, "%s", err.Error())
	}
	ab := rts.Abilities(rt.Name())
	switch {
	case from != nil && from.Checkpoint != "" && !ab.Checkpoint:
		return nil, unsupported(rt.Name(), "restore sandboxes from snapshots")
	case from != nil && from.Layer != "" && !ab.Layer:
		return nil, unsupported(rt.Name(), "start sandboxes from a template's files")
	case len(req.Volumes) > 0 && !ab.Mounts:
		return nil, unsupported(rt.Name(), "mount volumes")
	}
	return rt, nil
}

// runtimeOf is the runtime of rec's sandbox, which is ready: a sandbox
// only lives in a runtime its daemon started ("" in records of daemons
// that had one runtime: the default).
func (m *Manager) runtimeOf(rec *record) runtime.Runtime {
	rt, err := m.rts.Get(rec.Runtime)
	if err != nil {
		return m.rts.Default()
	}
	return rt
}

// abilitiesOf are the abilities of sb's runtime.
func (m *Manager) abilitiesOf(sb *sandbox) runtime.Abilities {
	return m.rts.Abilities(sb.rec.Runtime)
}
