package sandbox

// The runtime environment: sandbox::env::* change a running sandbox's own
// env layer (the create's env), which every later exec, process and
// interpreter context starts from, over the image's env and under their
// own. Running processes keep the env they started with.

import (
	"context"
	"slices"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// maxEnvBytes bounds a sandbox's own env layer.
const maxEnvBytes = 1 << 20

// env returns the env every exec of sb starts from.
func (sb *sandbox) env() []string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.baseEnv
}

// setEnvLayer makes layer sb's own env.
func (sb *sandbox) setEnvLayer(layer []string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.rec.Env = layer
	sb.baseEnv = baseEnv(sb.user, sb.image, layer)
}

// ListEnv answers a sandbox's env (sandbox::env::list).
func (m *Manager) ListEnv(ctx context.Context, req api.EnvListRequest) (api.EnvResponse, error) {
	sb, err := m.envSandbox(ctx, req.SandboxID)
	if err != nil {
		return api.EnvResponse{}, err
	}
	return envResponse(sb), nil
}

// GetEnv answers one variable of a sandbox's effective env (sandbox::env::get).
func (m *Manager) GetEnv(ctx context.Context, req api.EnvGetRequest) (api.EnvValue, error) {
	if err := validateEnvKeys([]string{req.Key}); err != nil {
		return api.EnvValue{}, err
	}
	sb, err := m.envSandbox(ctx, req.SandboxID)
	if err != nil {
		return api.EnvValue{}, err
	}
	out := api.EnvValue{Key: req.Key}
	for _, kv := range sb.env() {
		if k, v, _ := strings.Cut(kv, "="); k == req.Key {
			out.Value, out.Set = v, true
		}
	}
	return out, nil
}

// SetEnv adds or replaces variables of a sandbox's env (sandbox::env::set).
func (m *Manager) SetEnv(ctx context.Context, req api.EnvSetRequest) (api.EnvResponse, error) {
	if len(req.Env) == 0 {
		return api.EnvResponse{}, errdefs.Malformed("env is empty: give KEY=VALUE entries (a list or an object)")
	}
	if err := validateEnv("env", req.Env); err != nil {
		return api.EnvResponse{}, err
	}
	return m.changeEnv(ctx, req.SandboxID, func(layer []string) []string { return mergeEnv(layer, req.Env) })
}

// DeleteEnv removes variables from a sandbox's own env (sandbox::env::delete);
// a variable of the image's env is back to the image's value.
func (m *Manager) DeleteEnv(ctx context.Context, req api.EnvDeleteRequest) (api.EnvResponse, error) {
	if len(req.Keys) == 0 {
		return api.EnvResponse{}, errdefs.Malformed("keys is empty")
	}
	if err := validateEnvKeys(req.Keys); err != nil {
		return api.EnvResponse{}, err
	}
	return m.changeEnv(ctx, req.SandboxID, func(layer []string) []string {
		return slices.DeleteFunc(slices.Clone(layer), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.Contains(req.Keys, k)
		})
	})
}

// changeEnv replaces a running sandbox's own env layer with change's
// answer, and records it (forks and snapshots keep it).
func (m *Manager) changeEnv(ctx context.Context, id string, change func([]string) []string) (api.EnvResponse, error) {
	sb, err := m.envSandbox(ctx, id)
	if err != nil {
		return api.EnvResponse{}, err
	}
	sb.envMu.Lock()
	defer sb.envMu.Unlock()
	layer := change(sb.snapshotRecord().Env)
	size := 0
	for _, kv := range layer {
		size += len(kv)
	}
	if size > maxEnvBytes {
		return api.EnvResponse{}, errdefs.Malformed("the sandbox's env would be %d bytes; at most %d", size, maxEnvBytes)
	}
	sb.setEnvLayer(layer)
	rec := sb.snapshotRecord()
	if err := m.store.put(&rec); err != nil {
		return api.EnvResponse{}, errdefs.Wrap(errdefs.CodeInternal, err, "recording the sandbox's env")
	}
	return envResponse(sb), nil
}

// envSandbox returns the caller's sandbox id, which must not have ended.
func (m *Manager) envSandbox(ctx context.Context, id string) (*sandbox, error) {
	sb, err := m.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if st, end := sb.current(); st.ended() {
		return nil, stoppedError(sb.rec.ID, end)
	}
	return sb, nil
}

// envResponse describes sb's env.
func envResponse(sb *sandbox) api.EnvResponse {
	return api.EnvResponse{SandboxID: sb.rec.ID, Env: envMap(sb.snapshotRecord().Env), Effective: envMap(sb.env())}
}

// envMap turns KEY=VALUE entries into a map.
func envMap(env []string) map[string]string {
	out := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// validateEnvKeys checks variable names.
func validateEnvKeys(keys []string) error {
	for i, k := range keys {
		if !envName.MatchString(k) {
			return errdefs.Malformed("keys[%d]: %q is not a valid variable name (letters, digits and _, not starting with a digit)", i, clip(k, 64))
		}
	}
	return nil
}
