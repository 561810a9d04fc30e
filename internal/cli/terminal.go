package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// The interactive commands: `hutch shell`, `hutch exec -it` and attach to
// a process with stdin or a PTY.

func (a *app) shellCmd() *cobra.Command {
	var workdir string
	var env []string
	cmd := childCmd(&cobra.Command{
		Use:   "shell ID [-- CMD [ARG...]]",
		Short: "Open an interactive shell (or CMD) on a terminal in a sandbox; exit with its status",
		Args:  cobra.MinimumNArgs(1),
	})
	cmd.Flags().StringVarP(&workdir, "workdir", "w", "", "working directory inside the sandbox")
	cmd.Flags().StringArrayVarP(&env, "env", "e", nil, "set KEY=VALUE for the shell (repeatable)")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		id, argv := args[0], args[1:]
		if dash := cmd.ArgsLenAtDash(); dash > 1 {
			return usagef("want one ID before --, got %d arguments", dash)
		}
		return a.terminal(cmd.Context(), id, client.TerminalOptions{Cmd: argv, Cwd: workdir, Env: parseEnv(env)}, true)
	})
	return cmd
}

// terminal runs o on a terminal in sandbox id with this process's stdout
// and, with input, its stdin: raw input when stdin is a terminal, its size
// at the start and on every SIGWINCH, TERM passed through. It ends with
// the process's status. Input that is not a terminal (a pipe, a file)
// goes to the command without a terminal, as ssh does: its end closes the
// command's stdin, which a terminal has no way to say.
func (a *app) terminal(ctx context.Context, id string, o client.TerminalOptions, input bool) error {
	if input && !a.isTerminal(a.stdin) {
		return a.piped(ctx, id, o)
	}
	if t := a.getenv("TERM"); t != "" {
		o.Env = append(o.Env, "TERM="+t)
	}
	o.Cols, o.Rows = a.terminalSize()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t, err := a.client().Terminal(ctx, id, o)
	if err != nil {
		return err
	}
	defer t.Close()
	stopResize := a.onResize(func(cols, rows uint16) { _ = t.Resize(cols, rows) })
	defer stopResize()
	if input {
		restore, err := a.rawInput()
		if err != nil {
			return err
		}
		defer restore()
		go func() { _, _ = io.Copy(t, a.stdin) }()
	}
	if _, err := io.Copy(a.stdout, t); err != nil {
		return err
	}
	code, err := t.Wait()
	if err != nil {
		return err
	}
	return exitWith(code)
}

// piped runs o (the login shell when it has no command) in sandbox id
// without a terminal, this command's stdin its stdin until it ends, its
// output printed from the first byte; it ends with the process's status,
// and an interrupted CLI kills it.
func (a *app) piped(ctx context.Context, id string, o client.TerminalOptions) (err error) {
	argv := o.Cmd
	if len(argv) == 0 {
		argv = api.LoginShell
	}
	c := a.client()
	res, err := c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: argv, Env: o.Env, Workdir: o.Cwd, Stdin: true})
	if err != nil {
		return err
	}
	defer func() {
		if ctx.Err() != nil {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			defer cancel()
			_, _ = c.KillProcess(kctx, id, res.Pid)
		}
	}()
	return a.follow(ctx, c, id, api.ProcessInfo{Pid: res.Pid, Stdin: true}, 0, 0)
}

// exitWith turns a child's exit code into the CLI's status.
func exitWith(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// fdOf is the descriptor of a stream that has one.
func fdOf(stream any) (int, bool) {
	f, ok := stream.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	return int(f.Fd()), true
}

// terminalSize is the size of the terminal on stdout (or stdin); 0x0 when
// neither is one (the daemon's default then).
func (a *app) terminalSize() (cols, rows uint16) {
	for _, s := range []any{a.stdout, a.stdin} {
		if fd, ok := fdOf(s); ok && a.isTerminal(s) {
			if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
				return uint16(min(w, 65535)), uint16(min(h, 65535))
			}
		}
	}
	return 0, 0
}

// rawInput puts a terminal stdin in raw mode (keys go through as typed,
// Ctrl-C included) and returns how to restore it.
func (a *app) rawInput() (restore func(), err error) {
	fd, ok := fdOf(a.stdin)
	if !ok || !a.isTerminal(a.stdin) {
		return func() {}, nil
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("putting the terminal in raw mode: %w", err)
	}
	return func() { _ = term.Restore(fd, old) }, nil
}

// onResize calls resize with the new size on every SIGWINCH until stop.
func (a *app) onResize(resize func(cols, rows uint16)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				if cols, rows := a.terminalSize(); cols > 0 {
					resize(cols, rows)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// interactive feeds this command's stdin to process pid (attach): raw and
// with the terminal's size when the process has a PTY and stdin is a
// terminal. It returns how to restore the terminal.
func (a *app) interactive(ctx context.Context, c *client.Client, id string, pid int, pty bool) (restore func(), err error) {
	restore = func() {}
	if pty {
		if restore, err = a.rawInput(); err != nil {
			return nil, err
		}
		resize := func(cols, rows uint16) {
			_, _ = c.ResizeProcess(ctx, api.ProcessResizeRequest{SandboxID: id, Pid: pid, PtySize: api.PtySize{Cols: cols, Rows: rows}})
		}
		if cols, rows := a.terminalSize(); cols > 0 {
			resize(cols, rows)
		}
		stop := a.onResize(resize)
		prev := restore
		restore = func() { stop(); prev() }
	}
	go func() { _ = pumpStdin(ctx, c, id, pid, a.stdin) }()
	return restore, nil
}
