package cli

// issue 41: `hutch doctor`, the host check a newcomer runs first.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/doctor"
)

func (a *app) doctorCmd() *cobra.Command {
	var cfgPath, listen, engineListen, dataDir, runscPath, agentPath string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host for what hutch needs, and say what to fix",
		Long: `Check this host for what hutch serve needs: the kernel and its features,
cgroups, nftables, user namespaces, KVM (and so which runtimes work, and how
fast), the data dir's disk space and filesystem, memory for the configured
warm pool, the listen ports, runsc and hutch-agent, and the image cache.
Each line is a check and its verdict (ok, warn, FAIL), with what to do when
it is not ok. Exit status 0 when hutch can run here (warnings allowed), 1
when a check failed.

Pass the flags hutch serve will get (--config, --listen, ...) to check those.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&cfgPath, "config", "", "the daemon's YAML config file (defaults when omitted)")
	fl.StringVar(&listen, "listen", defaultListen, "the HTTP API address to check")
	fl.StringVar(&engineListen, "engine-listen", defaultEngineListen, `the engine WebSocket address to check ("" for none)`)
	fl.StringVar(&dataDir, "data-dir", a.dataDir(), "the data dir to check ($HUTCH_DATA_DIR)")
	fl.StringVar(&runscPath, "runsc-path", "", "runsc binary (default: next to hutch, then PATH)")
	fl.StringVar(&agentPath, "agent-path", "", "hutch-agent binary (default: next to hutch, then PATH)")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		cfg := config.Default()
		if cfgPath != "" {
			var err error
			if cfg, err = config.Load(cfgPath); err != nil {
				return err
			}
		}
		o := doctor.Options{Config: cfg, DataDir: dataDir, RunscPath: runscPath, AgentPath: agentPath}
		for _, l := range []string{listen, engineListen} {
			if l != "" {
				o.Listen = append(o.Listen, l)
			}
		}
		checks := doctor.Run(cmd.Context(), o)
		a.printChecks(checks)
		if doctor.Failed(checks) {
			fmt.Fprintln(a.stdout, "hutch cannot run here yet: fix the FAIL lines above")
			return &exitError{code: exitFailure}
		}
		fmt.Fprintln(a.stdout, "hutch can run here")
		return nil
	})
	return cmd
}

// printChecks writes one line per check, its fix indented below it.
func (a *app) printChecks(checks []doctor.Check) {
	width := 0
	for _, c := range checks {
		width = max(width, len(c.Name))
	}
	for _, c := range checks {
		fmt.Fprintf(a.stdout, "%-4s  %-*s  %s\n", c.Verdict, width, c.Name, c.Detail)
		if c.Fix != "" && c.Verdict != doctor.OK {
			fmt.Fprintf(a.stdout, "%-4s  %-*s  fix: %s\n", "", width, "", strings.TrimSpace(c.Fix))
		}
	}
}
