package cli

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// stopTimeout bounds the best-effort stop at the end of `hutch run`.
const stopTimeout = 10 * time.Second

// sandboxFlags are the create settings shared by run and create.
type sandboxFlags struct {
	cpus, memory uint32
	network      bool
	egress       api.EgressPolicy
	env          []string
	runtime      string
	preview      api.PreviewOptions // issue 37
}

func (f *sandboxFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Uint32Var(&f.cpus, "cpus", 0, "vCPU count (daemon default when omitted)")
	fl.Var(mibFlag[uint32]{&f.memory}, "memory", "memory: 512m, 1g, 2GiB (a bare number is MiB; daemon default when omitted)")
	fl.BoolVar(&f.network, "network", false, "give the sandbox outbound network access")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set KEY=VALUE in the sandbox (repeatable; entries without = are skipped)")
	fl.StringVar(&f.runtime, "runtime", "", "isolation runtime: gvisor or microvm (the daemon's default_runtime when omitted; hutch catalog lists them)")
	egressFlags(cmd, &f.egress)
	previewFlags(cmd, &f.preview) // issue 37 (preview.go)
}

func (f *sandboxFlags) request(image string) api.CreateRequest {
	req := api.CreateRequest{Image: image, CPUs: f.cpus, MemoryMB: f.memory, Network: f.network, Env: parseEnv(f.env), Runtime: f.runtime, Preview: previewOf(f.preview)}
	if !f.egress.Empty() {
		req.Network, req.Egress = true, &f.egress
	}
	return req
}

// childCmd prepares run and exec: their failures exit 125, and a flag
// error points at the "--" that separates the command.
func childCmd(cmd *cobra.Command) *cobra.Command {
	cmd.Annotations = map[string]string{childCommand: "1"}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v (the command to run goes after --: %s)", err, c.UseLine())
	})
	return cmd
}

// commandArgs validates "WHAT -- CMD [ARG...]".
func commandArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		_, _, err := splitCommand(cmd, args, what)
		return err
	}
}

// splitCommand splits "WHAT -- CMD [ARG...]" into WHAT and the command.
// Without "--" the first argument is WHAT and the rest the command.
func splitCommand(cmd *cobra.Command, args []string, what string) (string, []string, error) {
	before, after := args, []string(nil)
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		before, after = args[:dash], args[dash:]
	} else if len(args) > 0 {
		before, after = args[:1], args[1:]
	}
	if len(before) != 1 {
		return "", nil, usagef("want one %s before --, got %d arguments", what, len(before))
	}
	if len(after) == 0 || after[0] == "" {
		return "", nil, usagef("no command given: %s", cmd.UseLine())
	}
	return before[0], after, nil
}

func (a *app) runCmd() *cobra.Command {
	var f sandboxFlags
	var vols volumeFlags
	var timeout time.Duration
	cmd := childCmd(&cobra.Command{
		Use:   "run IMAGE [flags] -- CMD [ARG...]",
		Short: "Create a sandbox, run one command in it, stop it",
		Args:  commandArgs("IMAGE"),
	})
	f.register(cmd)
	vols.register(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "kill the command after this long (500ms, 30s, 5m); exits 124")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		image, argv, _ := splitCommand(cmd, args, "IMAGE")
		ms, err := timeoutMs(timeout)
		if err != nil {
			return err
		}
		req := f.request(image)
		if err := vols.apply(&req); err != nil {
			return err
		}
		ctx := cmd.Context()
		c := a.client()
		sb, _, err := a.create(ctx, c, req)
		if err != nil {
			return err
		}
		defer a.stopQuietly(ctx, c, sb.SandboxID)
		return a.execLive(ctx, c, api.ExecRequest{SandboxID: sb.SandboxID, Argv: argv, TimeoutMs: ms}, timeout)
	})
	return cmd
}

// stopQuietly stops sandbox id without waiting, even when ctx is done
// (Ctrl-C); a failure is a warning.
func (a *app) stopQuietly(ctx context.Context, c *client.Client, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if _, err := c.Stop(ctx, id, false); err != nil {
		fmt.Fprintf(a.stderr, "hutch: warning: stopping sandbox %s: %v\n", id, err)
	}
}

func (a *app) createCmd() *cobra.Command {
	var f createFlags
	var vols volumeFlags
	var name string
	cmd := &cobra.Command{
		Use:   "create IMAGE",
		Short: "Create a long-lived sandbox and print its id (IMAGE may be left out with --template or --snapshot)",
		Args:  cobra.RangeArgs(0, 1),
	}
	f.register(cmd)
	vols.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "label shown by hutch list")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		req, err := f.request(strings.Join(args, ""))
		if err != nil {
			return err
		}
		if err := vols.apply(&req); err != nil {
			return err
		}
		req.Name = name
		if req.Image == "" && req.Template == "" && req.SnapshotID == "" {
			return usagef("create needs an IMAGE, a --template or a --snapshot")
		}
		sb, took, err := a.create(cmd.Context(), a.client(), req)
		if err != nil {
			return err
		}
		// Only for a person at a terminal: $(hutch create ...) or 2>/dev/null
		// stay silent.
		if a.isTerminal(a.stderr) && a.isTerminal(a.stdout) {
			fmt.Fprintf(a.stderr, "✓ sandbox ready in %.2fs\n", took.Seconds())
		}
		fmt.Fprintln(a.stdout, sb.SandboxID)
		return nil
	})
	return cmd
}

func (a *app) execCmd() *cobra.Command {
	var env []string
	var timeout time.Duration
	var workdir string
	var stdin, detach, tty bool
	var tag string
	cmd := childCmd(&cobra.Command{
		Use:   "exec ID [flags] -- CMD [ARG...]",
		Short: "Run a command in a sandbox, its output printed as it comes (-d: in the background; -it: on a terminal)",
		Args:  commandArgs("ID"),
	})
	fl := cmd.Flags()
	fl.DurationVar(&timeout, "timeout", 0, "kill the command after this long (500ms, 30s, 5m); exits 124")
	fl.StringArrayVarP(&env, "env", "e", nil, "set KEY=VALUE for the command (repeatable; entries without = are skipped)")
	fl.StringVarP(&workdir, "workdir", "w", "", "working directory inside the sandbox")
	fl.BoolVarP(&stdin, "interactive", "i", false, "send this command's stdin to the command (-d: keep its stdin open for 'hutch attach')")
	fl.BoolVarP(&detach, "detach", "d", false, "start the command in the background and print its pid")
	fl.BoolVarP(&tty, "tty", "t", false, "run the command on a terminal (with -i: interactive, like 'hutch shell')")
	fl.StringVar(&tag, "tag", "", "label of a background process, shown by 'hutch ps'")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		id, argv, _ := splitCommand(cmd, args, "ID")
		ms, err := timeoutMs(timeout)
		if err != nil {
			return err
		}
		switch {
		case detach:
			start := api.ProcessStartRequest{SandboxID: id, Argv: argv, Env: parseEnv(env), Workdir: workdir,
				Stdin: stdin, Tag: tag, TimeoutMs: ms}
			if tty {
				cols, rows := a.terminalSize()
				start.Pty = &api.PtySize{Cols: max(cols, 80), Rows: max(rows, 24)}
			}
			res, err := a.client().StartProcess(cmd.Context(), start)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, res.Pid)
			return nil
		case tty:
			if timeout > 0 {
				return usagef("--timeout does not apply to a terminal (-t)")
			}
			return a.terminal(cmd.Context(), id, client.TerminalOptions{Cmd: argv, Cwd: workdir, Env: parseEnv(env)}, stdin)
		}
		req := api.ExecRequest{SandboxID: id, Argv: argv, Env: parseEnv(env), TimeoutMs: ms, Workdir: workdir}
		if stdin {
			data, err := io.ReadAll(a.stdin)
			if err != nil {
				return fmt.Errorf("reading stdin: %w", err)
			}
			req.Stdin = base64.StdEncoding.EncodeToString(data)
		}
		return a.execLive(cmd.Context(), a.client(), req, timeout)
	})
	return cmd
}

// execLive runs req with its output printed as it is written, then turns
// its status into the CLI's (childResult).
func (a *app) execLive(ctx context.Context, c *client.Client, req api.ExecRequest, timeout time.Duration) error {
	p := &outputPrinter{stdout: a.stdout, stderr: a.stderr}
	res, err := c.ExecStreamFramed(ctx, req, p.framed)
	if err != nil {
		return err
	}
	return a.childResult(res, timeout)
}

// childResult prints a finished command's output and turns its status into
// the CLI's: the child's exit code, or 124 after a timeout.
func (a *app) childResult(res api.ExecResponse, timeout time.Duration) error {
	io.WriteString(a.stdout, res.Stdout)
	io.WriteString(a.stderr, res.Stderr)
	for _, tr := range []struct {
		truncated bool
		stream    string
	}{{res.StdoutTruncated, "stdout"}, {res.StderrTruncated, "stderr"}} {
		if tr.truncated {
			fmt.Fprintf(a.stderr, "hutch: %s truncated at the daemon's output limit\n", tr.stream)
		}
	}
	switch {
	case res.TimedOut:
		// The timeout it ran with, as the daemon reports it (an older
		// daemon does not: then the one asked for).
		ran := time.Duration(res.TimeoutMs) * time.Millisecond
		switch {
		case ran > 0 && timeout == 0:
			fmt.Fprintf(a.stderr, "hutch: timed out after %s (the daemon's default exec timeout; raise it with --timeout)\n", ran)
		case ran > 0:
			fmt.Fprintf(a.stderr, "hutch: timed out after %s\n", ran)
		case timeout > 0:
			fmt.Fprintf(a.stderr, "hutch: timed out after %s\n", timeout)
		default:
			fmt.Fprintln(a.stderr, "hutch: timed out (the daemon's default exec timeout; raise it with --timeout)")
		}
		return &exitError{code: exitTimeout}
	case res.ExitCode == nil:
		fmt.Fprintln(a.stderr, "hutch: the command ended without an exit status")
		return &exitError{code: exitHutchFailure}
	case *res.ExitCode < 0 || *res.ExitCode > 255:
		fmt.Fprintf(a.stderr, "hutch: the command ended with status %d\n", *res.ExitCode)
		return &exitError{code: exitHutchFailure}
	case *res.ExitCode != 0:
		if res.OOMKilled {
			fmt.Fprintln(a.stderr, "hutch: killed: out of memory (the sandbox's memory_mb)")
		}
		return &exitError{code: *res.ExitCode}
	}
	return nil
}

func (a *app) listCmd() *cobra.Command {
	var states, metadata []string
	fetch := func(c *client.Client, ctx context.Context) (api.ListResponse, error) {
		md, err := parsePairs("--metadata", metadata)
		if err != nil {
			return api.ListResponse{}, err
		}
		return c.ListFiltered(ctx, api.ListRequest{State: states, Metadata: md})
	}
	cmd := listingCmd(a, &cobra.Command{
		Use:   "list",
		Short: "List sandboxes",
	}, api.FnList, fetch, func(w io.Writer, list api.ListResponse) error {
		return printList(w, list.Sandboxes)
	})
	cmd.Flags().StringSliceVar(&states, "state", nil, "only sandboxes in these states (running, paused, stopped, ...)")
	cmd.Flags().StringArrayVar(&metadata, "metadata", nil, "only sandboxes labelled KEY=VALUE (repeatable: all of them)")
	return cmd
}

func printList(w io.Writer, sandboxes []api.SandboxInfo) error {
	t := newTable(w, "ID", "NAME", "IMAGE", "AGE", "EXECS", "STATUS")
	for _, sb := range sandboxes {
		name := "-"
		if sb.Name != nil && *sb.Name != "" {
			name = *sb.Name
		}
		status := cmp.Or(sb.State, "running")
		if sb.Stopped {
			status = "stopped"
			if sb.StopReason != "" {
				status += " (" + sb.StopReason + ")"
			}
		}
		t.row(sb.SandboxID, name, sb.Image, formatAge(sb.AgeSecs), strconv.Itoa(sb.ExecInFlight), status)
	}
	return t.flush()
}

// formatAge renders seconds the way `docker ps` does, in one unit.
func formatAge(secs uint64) string {
	switch {
	case secs < 60:
		return fmt.Sprintf("%ds", secs)
	case secs < 3600:
		return fmt.Sprintf("%dm", secs/60)
	case secs < 48*3600:
		return fmt.Sprintf("%dh", secs/3600)
	}
	return fmt.Sprintf("%dd", secs/86400)
}

func (a *app) stopCmd() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "stop ID...",
		Short: "Stop sandboxes, printing each id once stopped (a failure is reported and the others are still stopped)",
		Args:  cobra.MinimumNArgs(1),
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "return once the sandboxes are fully gone")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		failed := false
		for _, id := range args {
			if _, err := a.client().Stop(cmd.Context(), id, wait); err != nil {
				if len(args) == 1 || cmd.Context().Err() != nil {
					return err
				}
				a.report(err)
				failed = true
				continue
			}
			fmt.Fprintln(a.stdout, id)
		}
		if failed {
			return &exitError{code: exitFailure}
		}
		return nil
	})
	return cmd
}
