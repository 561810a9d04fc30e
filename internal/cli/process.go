package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// The process commands: ps, logs, kill and attach (exec -d starts one).

// pidArgs parses "ID PID".
func pidArgs(args []string) (string, int, error) {
	pid, err := strconv.Atoi(args[1])
	if err != nil || pid <= 0 {
		return "", 0, usagef("PID must be a process id, not %q", args[1])
	}
	return args[0], pid, nil
}

func (a *app) psCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ps ID",
		Short: "List the processes of a sandbox (hutch's marked with *, and their tags)",
		Args:  cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			list, err := a.client().ListProcesses(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			t := newTable(a.stdout, "PID", "PPID", "USER", "STATE", "CPU%", "RSS", "TAG", "COMMAND")
			for _, p := range list.Processes {
				pid := strconv.Itoa(p.Pid)
				if p.Hutch {
					pid += "*"
				}
				t.row(pid, strconv.Itoa(p.Ppid), p.User, p.State, strconv.FormatFloat(p.CPUPercent, 'f', 1, 64),
					formatSize(int64(min(p.RSSBytes, math.MaxInt64))), tagOrDash(p.Tag), p.Command)
			}
			return t.flush()
		}),
	}
}

func (a *app) logsCmd() *cobra.Command {
	var follow bool
	var tag string
	cmd := &cobra.Command{
		Use:   "logs ID [PID]",
		Short: "Print what a process hutch started has written, or without PID what all of them have, each line after its tag or pid (-f: and follow)",
		Args:  cobra.RangeArgs(1, 2),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing output as it is written: until the process exits, or without PID until the sandbox stops")
	cmd.Flags().StringVar(&tag, "tag", "", "without PID: only the processes with this tag")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			p := &logPrinter{out: a.stdout, partial: map[logSource]bool{}}
			return a.client().Logs(cmd.Context(), api.LogsRequest{SandboxID: args[0], Tag: tag, Follow: follow}, p.event)
		}
		if tag != "" {
			return usagef("--tag is for the logs of all processes; leave out PID")
		}
		id, pid, err := pidArgs(args)
		if err != nil {
			return err
		}
		p := &outputPrinter{stdout: a.stdout, stderr: a.stderr}
		req := api.ProcessOutputRequest{SandboxID: id, Pid: pid}
		if follow {
			_, err := a.client().FollowProcess(cmd.Context(), req, p.event)
			return err
		}
		out, err := a.client().ProcessOutput(cmd.Context(), req)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			event string
			chunk api.OutputChunk
		}{{api.EventStdout, out.Stdout}, {api.EventStderr, out.Stderr}} {
			raw, _ := api.Marshal(c.chunk)
			if err := p.event(c.event, raw); err != nil {
				return err
			}
		}
		return nil
	})
	return cmd
}

func (a *app) killCmd() *cobra.Command {
	var signal string
	cmd := &cobra.Command{
		Use:   "kill ID PID",
		Short: "Kill a process's group (SIGKILL), or send it another signal with -s",
		Args:  cobra.ExactArgs(2),
	}
	cmd.Flags().StringVarP(&signal, "signal", "s", "", "signal to send: a name (TERM, SIGINT) or a number")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		id, pid, err := pidArgs(args)
		if err != nil {
			return err
		}
		c := a.client()
		var res api.ProcessSignalResponse
		if signal == "" {
			res, err = c.KillProcess(cmd.Context(), id, pid)
		} else {
			res, err = c.SignalProcess(cmd.Context(), api.ProcessSignalRequest{SandboxID: id, Pid: pid, Signal: signal})
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%d %s\n", res.Pid, res.Signal)
		return nil
	})
	return cmd
}

func (a *app) attachCmd() *cobra.Command {
	cmd := childCmd(&cobra.Command{
		Use:   "attach ID PID",
		Short: "Follow a process's output from now on and feed it this terminal's input; exit with its status",
		Args:  cobra.ExactArgs(2),
	})
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		id, pid, err := pidArgs(args)
		if err != nil {
			return err
		}
		return a.attach(cmd.Context(), a.client(), id, pid)
	})
	return cmd
}

// attach follows process pid of sandbox id from its current output on,
// sends this command's stdin to it when it has stdin, and ends with its
// status. On a terminal, a PTY process gets raw input and the size.
func (a *app) attach(ctx context.Context, c *client.Client, id string, pid int) error {
	info, err := c.GetProcess(ctx, id, pid)
	if err != nil {
		return err
	}
	return a.follow(ctx, c, id, info, info.StdoutBytes, info.StderrBytes)
}

// follow prints process info.Pid's output from the offsets on, feeding it
// this command's stdin when it has stdin, and ends with its status.
func (a *app) follow(ctx context.Context, c *client.Client, id string, info api.ProcessInfo, stdoutOffset, stderrOffset int64) error {
	pid := info.Pid
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if info.Stdin || info.Pty {
		restore, err := a.interactive(ctx, c, id, pid, info.Pty)
		if err != nil {
			return err
		}
		defer restore()
	}
	p := &outputPrinter{stdout: a.stdout, stderr: a.stderr}
	end, err := c.FollowProcess(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: pid,
		StdoutOffset: stdoutOffset, StderrOffset: stderrOffset}, p.event)
	if err != nil {
		return err
	}
	return a.processResult(end)
}

// processResult turns a process's end into the CLI's status, as
// childResult does for an exec.
func (a *app) processResult(end api.ProcessInfo) error {
	return a.childResult(api.ExecResponse{ExitCode: end.ExitCode, TimedOut: end.TimedOut}, 0)
}

// pumpStdin copies r to process pid's stdin until r ends (then closes the
// process's stdin) or ctx is done.
func pumpStdin(ctx context.Context, c *client.Client, id string, pid int, r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			req := api.ProcessStdinRequest{SandboxID: id, Pid: pid, Data: string(buf[:n])}
			if !utf8.Valid(buf[:n]) {
				req.Data, req.Base64 = base64.StdEncoding.EncodeToString(buf[:n]), true
			}
			if _, err := c.WriteStdin(ctx, req); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			_, err := c.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: pid, Close: true})
			return err
		}
		if rerr != nil {
			return rerr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// tagOrDash is a tag for a table cell.
func tagOrDash(tag string) string {
	if strings.TrimSpace(tag) == "" {
		return "-"
	}
	return tag
}
