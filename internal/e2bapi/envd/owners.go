package envd

// EntryInfo's owner, group and symlink target (envd 0.6's extended
// metadata). hutch's sandbox::fs entries carry none of them, so one
// find(1) in the sandbox, through sandbox::exec, reads them for a whole
// ListDir or Stat: each entry is "path NUL owner NUL group NUL target
// NUL", names being the only bytes a path cannot hold. The output is the
// sandbox's, hostile: exec bounds it, an entry not found in it (or a
// sandbox without GNU find) keeps the fields empty, as envd leaves what
// it cannot read. A symlink's target is, as envd's, the path it resolves
// to in the end (realpath(1), in a second exec when there are symlinks);
// one that does not resolve is its own path.

import (
	"context"
	"path"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
)

// ownershipTimeoutMs bounds the find of one call.
const ownershipTimeoutMs = 5000

// maxResolved bounds the symlinks one call resolves; the others keep
// what they point to as written.
const maxResolved = 256

// resolveScript prints, NUL after each, the resolved path of each argument
// or, when it does not resolve, the argument itself.
const resolveScript = `for p do r=$(realpath -e -- "$p" 2>/dev/null) || r=$p; printf '%s\0' "$r"; done`

// ownership is what find tells of one entry.
type ownership struct{ owner, group, target string }

// fillOwnership sets the owner, group and symlink target of entries: of
// root itself (depth 0), or of what lies up to depth levels under it.
func (s *server) fillOwnership(ctx context.Context, sc scope, root string, depth uint32, entries []*pb.EntryInfo) {
	if len(entries) == 0 {
		return
	}
	argv := []string{"find", root, "-maxdepth", strconv.FormatUint(uint64(depth), 10)}
	if depth > 0 {
		argv = append(argv, "-mindepth", "1")
	}
	argv = append(argv, "-printf", `%p\0%u\0%g\0%l\0`)
	res, err := call[api.ExecResponse](ctx, s.t, api.FnExec, api.ExecRequest{SandboxID: sc.sandbox, Argv: argv, TimeoutMs: ownershipTimeoutMs})
	if err != nil {
		return
	}
	found := parseOwnership(res.Stdout)
	var links []*pb.EntryInfo
	for _, e := range entries {
		o, ok := found[path.Clean(e.Path)]
		if !ok {
			continue
		}
		e.Owner, e.Group = o.owner, o.group
		if e.Type == pb.FileType_FILE_TYPE_SYMLINK && o.target != "" {
			e.SymlinkTarget = &o.target
			links = append(links, e)
		}
	}
	s.resolveTargets(ctx, sc, links[:min(len(links), maxResolved)])
}

// resolveTargets sets each link's target to the path it resolves to, or
// to its own path when it does not resolve; when the sandbox cannot say,
// the targets stay as written.
func (s *server) resolveTargets(ctx context.Context, sc scope, links []*pb.EntryInfo) {
	if len(links) == 0 {
		return
	}
	argv := []string{"sh", "-c", resolveScript, "sh"}
	for _, e := range links {
		argv = append(argv, e.Path)
	}
	res, err := call[api.ExecResponse](ctx, s.t, api.FnExec, api.ExecRequest{SandboxID: sc.sandbox, Argv: argv, TimeoutMs: ownershipTimeoutMs})
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		return
	}
	got := strings.Split(res.Stdout, "\x00")
	if len(got) != len(links)+1 { // each ends with its NUL
		return
	}
	for i, e := range links {
		if got[i] != "" {
			e.SymlinkTarget = &got[i]
		}
	}
}

// parseOwnership reads find's records; a last, cut one is dropped.
func parseOwnership(out string) map[string]ownership {
	fields := strings.Split(out, "\x00")
	found := make(map[string]ownership, len(fields)/4)
	for i := 0; i+4 < len(fields); i += 4 { // a record ends with its NUL
		found[path.Clean(fields[i])] = ownership{owner: fields[i+1], group: fields[i+2], target: fields[i+3]}
	}
	return found
}
