package sandbox

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
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
func (m *Manager) Install(ctx context.Context, req api.InstallRequest, emit emitFunc) (api.ExecResponse, error) {
	name := pipPackage
	index := m.cfg.PackageIndexes.Pip
	switch req.Manager {
	case managerPip:
	case managerNpm:
		name, index = npmPackage, m.cfg.PackageIndexes.Npm
	default:
		return api.ExecResponse{}, errdefs.Malformed("manager must be pip or npm, got %q", clip(req.Manager, 32))
	}
	if len(req.Packages) == 0 || len(req.Packages) > maxPackages {
		return api.ExecResponse{}, errdefs.Malformed("packages must name 1 to %d packages, got %d", maxPackages, len(req.Packages))
	}
	for _, p := range req.Packages {
		if !name.MatchString(p) {
			return api.ExecResponse{}, errdefs.Malformed("%q is not a %s package name (with an optional version)", clip(p, 64), req.Manager)
		}
	}
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.ExecResponse{}, err
	}
	if !sb.rec.Network {
		return api.ExecResponse{}, errdefs.New(errdefs.CodeMalformed, "sandbox %s has no network: installing packages needs one to reach the index", sb.rec.ID).
			WithFix(map[string]any{"network": true}, "create the sandbox with network: true")
	}
	if index != "" {
		if nw := m.attachment(sb); nw != nil && nw.Gateway.IsValid() {
			index = strings.TrimPrefix(rewriteLocalhost([]string{"I=" + index}, nw.Gateway, loopbackPorts([]string{"I=" + index}))[0], "I=")
		}
	}
	tool, argv := installArgv(req.Manager, index, req.Packages)
	check, err := m.Exec(ctx, api.ExecRequest{SandboxID: sb.rec.ID, Argv: tool})
	if err != nil {
		return api.ExecResponse{}, err
	}
	if !check.Success {
		return api.ExecResponse{}, errdefs.New(errdefs.CodeNoInterpreter, "sandbox %s (image %s) has no %s", sb.rec.ID, sb.rec.Image, req.Manager).
			WithFix(nil, m.withFix(req.Manager))
	}
	return m.procs.ExecStream(ctx, api.ExecRequest{SandboxID: sb.rec.ID, Argv: argv, TimeoutMs: m.cfg.MaxExecTimeoutMs, Workdir: packageDir(sb)}, emit)
}

// packageDir is where npm installs in sb, and where its JavaScript
// contexts find what it installed: the image's working directory, or the
// home directory when that is / (npm does not install into /).
func packageDir(sb *sandbox) string {
	if wd := sb.image.Config.WorkingDir; wd != "" && wd != "/" {
		return wd
	}
	for _, kv := range sb.env() {
		if home, ok := strings.CutPrefix(kv, "HOME="); ok && strings.HasPrefix(home, "/") && home != "/" {
			return home
		}
	}
	return "/root"
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
