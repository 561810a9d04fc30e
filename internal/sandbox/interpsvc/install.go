package interpsvc

import (
	"context"
	"net/url"
	"regexp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Package managers of sandbox::interpreter::install.
const (
	managerPip = "pip"
	managerNpm = "npm"
)

// maxPackages bounds one install.
const maxPackages = 64

// Package names: a name with an optional version; nothing that could be
// an option, a path or a URL.
var (
	pipPackage = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(\[[A-Za-z0-9,._-]{1,128}\])?((==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!_-]{1,64}(,(==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!_-]{1,64})*)?$`)
	npmPackage = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]{0,127}/)?[a-z0-9][a-z0-9._-]{0,127}(@[A-Za-z0-9.^~<>=*+_ |-]{1,64})?$`)
)

// Install installs packages into a sandbox with pip or npm from the
// operator's package_indexes (sandbox::interpreter::install): the tool's
// output is emitted as it writes, and its exit is the result. It needs a
// sandbox with a network; an index on the host's loopback is reached at
// the sandbox's gateway.
func (s *Service) Install(ctx context.Context, req api.InstallRequest, emit emitFunc) (api.ExecResponse, error) {
	name := pipPackage
	index := s.indexes.Pip
	switch req.Manager {
	case managerPip:
	case managerNpm:
		name, index = npmPackage, s.indexes.Npm
	default:
		return api.ExecResponse{}, errdefs.Malformed("manager must be pip or npm, got %q", spec.Clip(req.Manager, 32))
	}
	if len(req.Packages) == 0 || len(req.Packages) > maxPackages {
		return api.ExecResponse{}, errdefs.Malformed("packages must name 1 to %d packages, got %d", maxPackages, len(req.Packages))
	}
	for _, p := range req.Packages {
		if !name.MatchString(p) {
			return api.ExecResponse{}, errdefs.Malformed("%q is not a %s package name (with an optional version)", spec.Clip(p, 64), req.Manager)
		}
	}
	info, err := s.core.Get(ctx, api.GetRequest{SandboxID: req.SandboxID})
	if err != nil {
		return api.ExecResponse{}, err
	}
	if !info.Network {
		return api.ExecResponse{}, errdefs.New(errdefs.CodeMalformed, "sandbox %s has no network: installing packages needs one to reach the index", info.SandboxID).
			WithFix(map[string]any{"network": true}, "create the sandbox with network: true")
	}
	// npm installs in the sandbox's Workdir, where its JavaScript contexts
	// find what it installed (NODE_PATH).
	sb, release, err := s.core.Acquire(ctx, info.SandboxID, sandbox.UseRecord)
	if err != nil {
		return api.ExecResponse{}, err
	}
	index, dir := sb.HostURL(index), sb.Workdir()
	release()
	tool, argv := installArgv(req.Manager, index, req.Packages)
	check, err := s.core.Exec(ctx, api.ExecRequest{SandboxID: info.SandboxID, Argv: tool})
	if err != nil {
		return api.ExecResponse{}, err
	}
	if !check.Success {
		return api.ExecResponse{}, errdefs.New(errdefs.CodeNoInterpreter, "sandbox %s (image %s) has no %s", info.SandboxID, info.Image, req.Manager).
			WithFix(nil, sb.Fix(req.Manager))
	}
	return s.procs.ExecStream(ctx, api.ExecRequest{SandboxID: info.SandboxID, Argv: argv, TimeoutMs: s.maxTimeoutMs, Workdir: dir}, emit)
}

// installArgv is the command that finds manager (exits 0 when it is
// there) and the one that installs packages from index ("" for the
// tool's default).
func installArgv(manager, index string, packages []string) (check, install []string) {
	if manager == managerNpm {
		install = []string{"npm", "install", "--no-audit", "--no-fund", "--no-update-notifier"}
		if index != "" {
			install = append(install, "--registry", index)
		}
		return []string{"sh", "-c", "command -v npm"}, append(install, packages...)
	}
	install = []string{"python3", "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--break-system-packages", "--root-user-action=ignore"}
	if index != "" {
		install = append(install, "--index-url", index)
		if u, err := url.Parse(index); err == nil && u.Scheme == "http" {
			install = append(install, "--trusted-host", u.Hostname())
		}
	}
	return []string{"python3", "-c", "import pip"}, append(append(install, "--"), packages...)
}
