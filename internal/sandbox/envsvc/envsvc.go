// Package envsvc is the runtime environment service: sandbox::env::*
// change a running sandbox's own env layer (the create's env), which every
// later exec, process and interpreter context starts from, over the
// image's env and under their own. Running processes keep the env they
// started with. It reaches a sandbox only through sandbox.Sandboxes.
package envsvc

import (
	"context"
	"slices"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// MaxBytes bounds a sandbox's own env layer.
const MaxBytes = 1 << 20

// Service answers sandbox::env::* (functions.Environment).
type Service struct{ sbs sandbox.Sandboxes }

// New is the env service over sbs.
func New(sbs sandbox.Sandboxes) *Service { return &Service{sbs: sbs} }

// ListEnv answers a sandbox's env (sandbox::env::list).
func (s *Service) ListEnv(ctx context.Context, req api.EnvListRequest) (api.EnvResponse, error) {
	h, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseRecord)
	if err != nil {
		return api.EnvResponse{}, err
	}
	defer release()
	return response(h), nil
}

// GetEnv answers one variable of a sandbox's effective env (sandbox::env::get).
func (s *Service) GetEnv(ctx context.Context, req api.EnvGetRequest) (api.EnvValue, error) {
	if err := spec.ValidateEnvKeys([]string{req.Key}); err != nil {
		return api.EnvValue{}, err
	}
	h, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseRecord)
	if err != nil {
		return api.EnvValue{}, err
	}
	defer release()
	out := api.EnvValue{Key: req.Key}
	_, effective := h.Env()
	for _, kv := range effective {
		if k, v, _ := strings.Cut(kv, "="); k == req.Key {
			out.Value, out.Set = v, true
		}
	}
	return out, nil
}

// SetEnv adds or replaces variables of a sandbox's env (sandbox::env::set).
func (s *Service) SetEnv(ctx context.Context, req api.EnvSetRequest) (api.EnvResponse, error) {
	if len(req.Env) == 0 {
		return api.EnvResponse{}, errdefs.Malformed("env is empty: give KEY=VALUE entries (a list or an object)")
	}
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return api.EnvResponse{}, err
	}
	return s.change(ctx, req.SandboxID, func(layer []string) []string { return spec.MergeEnv(layer, req.Env) })
}

// DeleteEnv removes variables from a sandbox's own env (sandbox::env::delete);
// a variable of the image's env is back to the image's value.
func (s *Service) DeleteEnv(ctx context.Context, req api.EnvDeleteRequest) (api.EnvResponse, error) {
	if len(req.Keys) == 0 {
		return api.EnvResponse{}, errdefs.Malformed("keys is empty")
	}
	if err := spec.ValidateEnvKeys(req.Keys); err != nil {
		return api.EnvResponse{}, err
	}
	return s.change(ctx, req.SandboxID, func(layer []string) []string {
		return slices.DeleteFunc(slices.Clone(layer), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.Contains(req.Keys, k)
		})
	})
}

// change replaces a sandbox's own env layer with change's answer, which
// the core records (forks and snapshots keep it).
func (s *Service) change(ctx context.Context, id string, change func([]string) []string) (api.EnvResponse, error) {
	h, release, err := s.sbs.Acquire(ctx, id, sandbox.UseRecord)
	if err != nil {
		return api.EnvResponse{}, err
	}
	defer release()
	err = h.ChangeEnv(func(own []string) ([]string, error) {
		layer := change(own)
		size := 0
		for _, kv := range layer {
			size += len(kv)
		}
		if size > MaxBytes {
			return nil, errdefs.Malformed("the sandbox's env would be %d bytes; at most %d", size, MaxBytes)
		}
		return layer, nil
	})
	if err != nil {
		return api.EnvResponse{}, err
	}
	return response(h), nil
}

// response describes h's env.
func response(h sandbox.Handle) api.EnvResponse {
	own, effective := h.Env()
	return api.EnvResponse{SandboxID: h.ID(), Env: envMap(own), Effective: envMap(effective)}
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
