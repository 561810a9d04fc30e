package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Commands name a sandbox by its full id, its name (create --name) or a
// unique prefix of its id. The CLI resolves the last two through
// sandbox::list before it calls the daemon, which takes full ids only: one
// rule for every command, and no second meaning for an id on the API.

// sandboxFlagNames are the flags that name a sandbox, on any command.
var sandboxFlagNames = []string{"sandbox", "from-sandbox"}

// fullID matches a sandbox id as the daemon makes them (a UUID): it is
// used as given, without a listing.
var fullID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// sandboxArgs reads which arguments of cmd name sandboxes from its usage
// line, where ID always stands for a sandbox: their positions, and
// whether all of them do ("ID...").
func sandboxArgs(cmd *cobra.Command) (positions []int, all bool) {
	words := strings.Fields(cmd.Use)
	for i, w := range words[min(1, len(words)):] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "(") || w == "[flags]" {
			break
		}
		switch strings.Trim(w, "[]") {
		case "ID":
			positions = append(positions, i)
		case "ID...":
			return nil, true
		}
	}
	return positions, false
}

// resolveSandboxArgs makes every command under root that names sandboxes
// (ID in its usage line, or a --sandbox flag) resolve them to ids before
// it runs.
func (a *app) resolveSandboxArgs(root *cobra.Command) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		run := cmd.RunE
		positions, all := sandboxArgs(cmd)
		hasFlag := slices.ContainsFunc(sandboxFlagNames, func(n string) bool { return cmd.Flags().Lookup(n) != nil })
		if run == nil || len(positions) == 0 && !all && !hasFlag {
			return
		}
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			args = slices.Clone(args)
			for i := range args {
				// A flag among the arguments (git parses its own) is left.
				if !all && !slices.Contains(positions, i) || strings.HasPrefix(args[i], "-") {
					continue
				}
				id, err := a.resolveSandbox(cmd.Context(), args[i])
				if err != nil {
					return &commandError{err: err}
				}
				args[i] = id
			}
			for _, name := range sandboxFlagNames {
				if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
					if err := a.resolveSandboxFlag(cmd.Context(), f); err != nil {
						return &commandError{err: err}
					}
				}
			}
			return run(cmd, args)
		}
	}
	walk(root)
}

func (a *app) resolveSandboxFlag(ctx context.Context, f *pflag.Flag) error {
	id, err := a.resolveSandbox(ctx, f.Value.String())
	if err != nil {
		return fmt.Errorf("--%s: %w", f.Name, err)
	}
	return f.Value.Set(id)
}

// resolveSandbox turns ref (a full id, a name or an id prefix) into a
// sandbox id. A name wins over a prefix; of several sandboxes of one name
// the only one not stopped is taken. A ref that matches nothing is an
// error.
func (a *app) resolveSandbox(ctx context.Context, ref string) (string, error) {
	if ref == "" || fullID.MatchString(ref) {
		return ref, nil
	}
	list, err := a.client().List(ctx)
	if err != nil {
		return "", fmt.Errorf("looking up sandbox %q: %w", ref, err)
	}
	var named, prefixed []api.SandboxInfo
	for _, sb := range list.Sandboxes {
		switch {
		case sb.SandboxID == ref:
			return ref, nil
		case sb.Name != nil && *sb.Name == ref:
			named = append(named, sb)
		case strings.HasPrefix(sb.SandboxID, ref):
			prefixed = append(prefixed, sb)
		}
	}
	if len(named) > 1 {
		if live := slices.DeleteFunc(slices.Clone(named), func(sb api.SandboxInfo) bool { return sb.Stopped }); len(live) == 1 {
			named = live
		}
	}
	for i, match := range [][]api.SandboxInfo{named, prefixed} {
		switch len(match) {
		case 0:
			continue
		case 1:
			return match[0].SandboxID, nil
		}
		how := "are named"
		if i == 1 {
			how = "have ids that start with"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d sandboxes %s %q; give more of the id:", len(match), how, ref)
		for _, sb := range match {
			fmt.Fprintf(&b, "\n  %s", describeSandbox(sb))
		}
		return "", errors.New(b.String())
	}
	return "", fmt.Errorf("no sandbox has the name or id prefix %q ('hutch list' shows them)", ref)
}

// describeSandbox is one line naming a sandbox for a person.
func describeSandbox(sb api.SandboxInfo) string {
	s := sb.SandboxID
	if sb.Name != nil && *sb.Name != "" {
		s += " " + safetext.Line(*sb.Name, 64)
	}
	if sb.Stopped {
		return s + " (stopped)"
	}
	return s + " (" + cmp.Or(sb.State, "running") + ")"
}
