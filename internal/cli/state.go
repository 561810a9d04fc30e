package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// createFlags are the flags of what a create asks for (create, template
// create): resources and life terms.
type createFlags struct {
	sandboxFlags
	lifeFlags
}

func (f *createFlags) register(cmd *cobra.Command) {
	f.sandboxFlags.register(cmd)
	f.lifeFlags.register(cmd)
}

// request is the create request of f for image ("" for none).
func (f *createFlags) request(image string) (api.CreateRequest, error) {
	req := f.sandboxFlags.request(image)
	return req, f.lifeFlags.apply(&req)
}

// lifeFlags are create's flags of a sandbox's life: its idle timeout and
// lifetime, what idleness does, auto-resume and metadata, and where it
// starts from.
type lifeFlags struct {
	idle       uint64
	snapshot   string
	template   string
	lifetime   time.Duration
	onIdle     string
	autoResume bool
	metadata   []string
}

func (f *lifeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Var(secondsFlag{&f.idle}, "idle-timeout", "stop (or with --on-idle pause, pause) the sandbox after this long without activity: 90s, 5m, 1h (a bare number is seconds; daemon default when omitted)")
	fl.StringVar(&f.template, "template", "", "start from this template ('hutch template create'): its defaults fill the flags not given")
	fl.StringVar(&f.snapshot, "snapshot", "", "start the sandbox from this snapshot ('hutch snapshot create'): its memory, processes and files; IMAGE must be its image")
	fl.DurationVar(&f.lifetime, "lifetime", 0, "stop the sandbox this long after its create, whatever its activity (30m, 2h); 'hutch set-timeout' moves it")
	fl.StringVar(&f.onIdle, "on-idle", "", "what the idle timeout does: stop (the default) or pause")
	fl.BoolVar(&f.autoResume, "auto-resume", false, "resume the sandbox by itself when a call reaches it while paused")
	fl.StringArrayVar(&f.metadata, "metadata", nil, "label KEY=VALUE, shown by 'hutch list --json' and matched by 'hutch list --metadata' (repeatable)")
}

// apply sets f on req.
func (f *lifeFlags) apply(req *api.CreateRequest) error {
	secs, err := wholeSeconds("--lifetime", f.lifetime)
	if err != nil {
		return err
	}
	md, err := parsePairs("--metadata", f.metadata)
	if err != nil {
		return err
	}
	req.IdleTimeoutSecs, req.TimeoutSecs, req.OnIdle, req.AutoResume, req.Metadata = f.idle, secs, f.onIdle, f.autoResume, md
	req.SnapshotID, req.Template = f.snapshot, f.template
	return nil
}

// wholeSeconds is d in whole seconds, rounded up: a usage error when d is
// negative.
func wholeSeconds(flag string, d time.Duration) (uint64, error) {
	if d < 0 {
		return 0, usagef("%s must not be negative", flag)
	}
	return uint64((d + time.Second - 1) / time.Second), nil
}

// parsePairs reads KEY=VALUE arguments of flag into a map.
func parsePairs(flag string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q is not KEY=VALUE", flag, p)
		}
		out[k] = v
	}
	return out, nil
}

func (a *app) pauseCmd() *cobra.Command {
	var hibernate, files bool
	cmd := &cobra.Command{
		Use:   "pause ID",
		Short: "Pause a sandbox: it stops using CPU and keeps its memory (or with --hibernate, is written to disk) until `hutch resume`",
		Args:  cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVar(&hibernate, "hibernate", false, "write its memory, processes and files to disk and end its host processes")
	cmd.Flags().BoolVar(&files, "files-only", false, "keep only its files and end its processes; its resume boots it again on them")
	cmd.MarkFlagsMutuallyExclusive("hibernate", "files-only")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		depth := api.PauseFreeze
		if hibernate {
			depth = api.PauseHibernate
		} else if files {
			depth = api.PauseFiles
		}
		if _, err := a.client().Pause(cmd.Context(), args[0], depth); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, args[0])
		return nil
	})
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a paused sandbox",
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		if _, err := a.client().Resume(cmd.Context(), args[0]); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, args[0])
		return nil
	})
	return cmd
}

func (a *app) setTimeoutCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-timeout ID DUR",
		Short: "Stop a sandbox DUR from now (30m, 2h), whatever its activity; prints when",
		Args:  cobra.ExactArgs(2),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return usagef("DUR %q: %v", args[1], err)
		}
		secs, err := wholeSeconds("DUR", d)
		if err != nil {
			return err
		}
		resp, err := a.client().SetTimeout(cmd.Context(), args[0], secs)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, resp.ExpiresAt)
		return nil
	})
	return cmd
}

func (a *app) snapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Snapshot sandboxes (memory, processes, files) and manage the snapshots (create, ls, rm)",
		Args:  cobra.NoArgs,
	}
	var name string
	create := &cobra.Command{
		Use:   "create ID",
		Short: "Snapshot a running sandbox, which goes on running; prints the snapshot id (`hutch create --snapshot` starts sandboxes from it)",
		Args:  cobra.ExactArgs(1),
	}
	create.Flags().StringVar(&name, "name", "", "label shown by 'hutch snapshot ls'")
	create.RunE = action(func(cmd *cobra.Command, args []string) error {
		info, err := a.client().CreateSnapshot(cmd.Context(), args[0], name)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, info.SnapshotID)
		return nil
	})
	ls := listingCmd(a, &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your snapshots",
	}, api.FnSnapshotList, (*client.Client).ListSnapshots, func(w io.Writer, list api.SnapshotListResponse) error {
		t := newTable(w, "ID", "NAME", "SANDBOX", "IMAGE", "SIZE", "CREATED")
		for _, s := range list.Snapshots {
			t.row(s.SnapshotID, cmp.Or(safetext.Escape(s.Name), "-"), s.SandboxID, s.Image, formatSize(s.SizeBytes), s.CreatedAt)
		}
		return t.flush()
	})
	rm := &cobra.Command{
		Use:   "rm SNAPSHOT...",
		Short: "Delete snapshots",
		Args:  cobra.MinimumNArgs(1),
	}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		for _, id := range args {
			if _, err := a.client().DeleteSnapshot(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, id)
		}
		return nil
	})
	cmd.AddCommand(create, ls, rm)
	cmd.AddCommand(a.templateBuildCmd()) // issue 39: hutch template build
	return cmd
}

func (a *app) forkCmd() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "fork ID",
		Short: "Make running copies of a sandbox, which continue from its memory and files; prints their ids",
		Args:  cobra.ExactArgs(1),
	}
	cmd.Flags().IntVarP(&n, "count", "n", 1, "how many copies")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		resp, err := a.client().Fork(cmd.Context(), args[0], n)
		if err != nil {
			return err
		}
		for _, id := range resp.SandboxIDs {
			fmt.Fprintln(a.stdout, id)
		}
		return nil
	})
	return cmd
}

func (a *app) templateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Name starting points for `hutch create --template` (create, ls, rm)",
		Args:  cobra.NoArgs,
	}
	var f createFlags
	var from string
	create := &cobra.Command{
		Use:   "create NAME [IMAGE]",
		Short: "Create a template: IMAGE and defaults (the create flags), a --snapshot, or the files of --from-sandbox ID",
		Args:  cobra.RangeArgs(1, 2),
	}
	f.register(create)
	create.Flags().StringVar(&from, "from-sandbox", "", "capture the files this running sandbox changed: its sandboxes start with them")
	create.RunE = action(func(cmd *cobra.Command, args []string) error {
		req, err := f.request(strings.Join(args[1:], ""))
		if err != nil {
			return err
		}
		t, err := a.client().CreateTemplate(cmd.Context(), api.TemplateCreateRequest{Name: args[0], FromSandbox: from,
			TemplateDefaults: api.DefaultsOf(req)})
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, t.Name)
		return nil
	})
	ls := listingCmd(a, &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your templates",
	}, api.FnTemplateList, (*client.Client).ListTemplates, func(w io.Writer, list api.TemplateListResponse) error {
		t := newTable(w, "NAME", "IMAGE", "FROM", "LAYER", "CREATED")
		for _, tm := range list.Templates {
			from := cmp.Or(tm.FromSandbox, tm.SnapshotID, "-")
			layer := "-"
			if tm.LayerBytes > 0 {
				layer = formatSize(tm.LayerBytes)
			}
			t.row(tm.Name, tm.Image, from, layer, tm.CreatedAt)
		}
		return t.flush()
	})
	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Delete templates",
		Args:  cobra.MinimumNArgs(1),
	}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		for _, name := range args {
			if _, err := a.client().DeleteTemplate(cmd.Context(), name); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, name)
		}
		return nil
	})
	cmd.AddCommand(create, ls, rm)
	cmd.AddCommand(a.templateBuildCmd()) // issue 39: hutch template build
	return cmd
}
