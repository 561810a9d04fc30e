// Package cli is the hutch command line: `hutch serve` runs the daemon, the
// other commands talk to it over the HTTP API through package client.
// Commands parse flags into api payloads and print results; the daemon
// does the work.
//
// Exit status:
//
//	0     success (run, exec: the child exited 0)
//	N     run, exec: the child exited with N
//	124   run, exec: the command timed out (--timeout or the daemon's default)
//	125   run, exec: hutch itself failed (error envelope, no daemon, bad usage)
//	130   interrupted (SIGINT/SIGTERM) while waiting for the daemon
//	1     any other command failed
//	2     any other command was used wrongly (unknown flag, missing argument)
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/envelope"
)

// Version is reported by `hutch --version`; the build sets it with
// -ldflags "-X github.com/hutch-dev/hutch/internal/cli.Version=...".
var Version = "dev"

// Exit statuses of hutch itself (see the package comment).
const (
	exitFailure      = 1
	exitUsage        = 2
	exitTimeout      = 124
	exitHutchFailure = 125
	exitInterrupted  = 130
)

// Run runs the hutch command line with args (without the program name) and
// returns the exit status. SIGINT and SIGTERM cancel the command's context;
// a second signal kills the process.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // let a second signal take its default action
	}()
	a := &app{
		stdin:        stdin,
		stdout:       stdout,
		stderr:       stderr,
		getenv:       os.Getenv,
		isTerminal:   isTerminal,
		pollInterval: 500 * time.Millisecond,
		startDaemon:  startDaemon,
		serviceState: serviceState,
		healthWait:   30 * time.Second,
	}
	return a.run(ctx, args)
}

// app is one invocation of the CLI with its streams and environment, all
// injectable for tests.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// isTerminal reports whether a stream is a terminal.
	isTerminal func(stream any) bool
	// pollInterval is the period of image build progress polls.
	pollInterval time.Duration
	// startDaemon starts `hutch serve` in the background (see autostart.go).
	startDaemon func(dataDir, listen string) (logPath string, exited <-chan error, err error)
	// serviceState is systemd's state of the package's unit, "" without
	// it (see service.go).
	serviceState func() string
	// healthWait bounds the wait for an auto-started daemon, and for the
	// unit's socket while the unit starts.
	healthWait time.Duration
	// fsUser is `hutch fs --user`.
	fsUser string
}

// client is the client of the daemon the environment names; without
// $HUTCH_URL it first waits for the socket of a unit that is starting.
func (a *app) client() *client.Client {
	if a.getenv("HUTCH_URL") == "" {
		a.awaitServiceSocket()
	}
	return client.Env(a.getenv)
}

// dataDir is $HUTCH_DATA_DIR, else the daemon's default.
func (a *app) dataDir() string {
	if d := a.getenv("HUTCH_DATA_DIR"); d != "" {
		return d
	}
	return defaultDataDir
}

func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return a.exitCode(ctx, cmd, err)
}

// rootCmd is the command tree of hutch.
func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "hutch",
		Short:         "Run untrusted code in short-lived gVisor sandboxes",
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.AddCommand(a.quotaCmd()) // issue 38
	root.AddCommand(a.serveCmd(), a.runCmd(), a.createCmd(), a.execCmd(), a.shellCmd(), a.psCmd(), a.logsCmd(), a.killCmd(), a.attachCmd(), a.listCmd(), a.stopCmd(), a.pauseCmd(), a.resumeCmd(), a.setTimeoutCmd(), a.snapshotCmd(), a.templateCmd(), a.forkCmd(), a.eventsCmd(), a.alertCmd(), a.webhookCmd(), a.jobCmd(), a.runCodeCmd(), a.replCmd(), a.contextCmd(), a.installCmd(), a.mcpCmd(), a.functionsCmd(), a.exposeCmd(), a.portsCmd(), a.unexposeCmd(), a.portForwardCmd(), a.networkCmd(), a.envCmd(), a.volumeCmd(), a.gitCmd(), a.benchCmd(), a.triggerCmd(), a.fsCmd(), a.uploadCmd(), a.downloadCmd(), a.catalogCmd(), a.imageCmd(), a.watchdogCmd())
	root.AddCommand(a.opsCmds()...) // issue 41: doctor, version, admin, man
	root.AddCommand(a.secretCmd())  // issue 37
	a.resolveSandboxArgs(root)
	return root
}

// childCommand marks run and exec, whose own failures exit 125 so that
// they never collide with the child's statuses.
const childCommand = "hutch/child-status"

// exitError ends the command with a status, its message already printed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// commandError is a failure of a command's action (not of its usage).
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// action wraps a command's RunE so that its failures are told apart from
// usage errors, which cobra reports through the same return value.
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			var ue *usageError
			var ee *exitError
			if errors.As(err, &ue) || errors.As(err, &ee) {
				return err
			}
			return &commandError{err: err}
		}
		return nil
	}
}

// usageError is wrong usage found by a command itself.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// exitCode reports err and turns it into the exit status of cmd.
func (a *app) exitCode(ctx context.Context, cmd *cobra.Command, err error) int {
	if err == nil {
		return 0
	}
	child := cmd != nil && cmd.Annotations[childCommand] != ""
	var ee *exitError
	var ce *commandError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ce):
		if ctx.Err() != nil {
			fmt.Fprintln(a.stderr, "hutch: interrupted")
			return exitInterrupted
		}
		a.report(ce.err)
		if child {
			return exitHutchFailure
		}
		return exitFailure
	}
	// Usage: flag parsing, argument counts, unknown commands.
	name := "hutch"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(a.stderr, "hutch: %v\nRun '%s --help' for usage.\n", err, name)
	if child {
		return exitHutchFailure
	}
	return exitUsage
}

// report prints err on stderr: an envelope as "hutch: CODE: message" plus
// its fix note, anything else as "hutch: message".
func (a *app) report(err error) {
	var env *api.ErrorEnvelope
	switch {
	case errors.As(err, &env):
		fmt.Fprintf(a.stderr, "hutch: %s: %s\n", env.Code, env.Message)
		switch {
		case env.FixNote == "":
		case env.Code == envelope.CodeFunctionNotFound:
			// The hint is about function ids themselves.
			fmt.Fprintf(a.stderr, "hutch: hint: %s\n", env.FixNote)
		default:
			fmt.Fprintf(a.stderr, "hutch: hint: %s\n", cliHint(env.FixNote))
		}
	case client.IsUnreachable(err):
		fmt.Fprintf(a.stderr, "hutch: %v\nhutch: hint: start the daemon with `hutch serve`, or point HUTCH_URL at one\n", err)
	default:
		fmt.Fprintf(a.stderr, "hutch: %v\n", err)
	}
}

// parseEnv keeps the KEY=VALUE entries of -e flags; entries without "=" (or
// with an empty key) are skipped silently, as the seed CLI does.
func parseEnv(entries []string) api.Env {
	var env api.Env
	for _, e := range entries {
		if strings.IndexByte(e, '=') > 0 {
			env = append(env, e)
		}
	}
	return env
}

// timeoutMs converts a --timeout to the payload's milliseconds; 0 leaves
// the daemon's default.
func timeoutMs(d time.Duration) (uint64, error) {
	switch {
	case d < 0:
		return 0, usagef("--timeout must not be negative, got %s", d)
	case d == 0:
		return 0, nil
	case d < time.Millisecond:
		return 1, nil
	}
	return uint64(d.Milliseconds()), nil
}
