package cli

// issue 41: `hutch version`.

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/internal/doctor"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// buildVersion is this binary's version and build: Version, and the Go
// build's module, commit and toolchain.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	return Version + " (" + doctor.Describe(bi) + ")"
}

func (a *app) versionCmd() *cobra.Command {
	var runscPath, agentPath string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the versions of hutch, the daemon, runsc (gVisor) and hutch-agent",
		Long: `Print the version and build of this hutch binary (the client), of the
daemon it talks to ($HUTCH_URL, or the local socket), and of the runsc
(gVisor) and hutch-agent binaries next to it.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&runscPath, "runsc-path", "", "runsc binary (default: next to hutch, then PATH)")
	cmd.Flags().StringVar(&agentPath, "agent-path", "", "hutch-agent binary (default: next to hutch, then PATH)")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		fmt.Fprintf(a.stdout, "client:  hutch %s\n", buildVersion())
		c := a.client()
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		var h struct {
			Version string `json:"version"`
		}
		if err := c.HealthInfo(ctx, &h); err != nil {
			fmt.Fprintf(a.stdout, "daemon:  not reachable at %s (%v)\n", c.URL(), err)
		} else {
			fmt.Fprintf(a.stdout, "daemon:  hutch %s at %s\n", h.Version, c.URL())
		}
		if p, err := runtime.FindBinary(runscPath, "runsc"); err != nil {
			fmt.Fprintf(a.stdout, "gvisor:  %v\n", err)
		} else if v, err := doctor.RunscVersion(cmd.Context(), p); err != nil {
			fmt.Fprintf(a.stdout, "gvisor:  %v\n", err)
		} else {
			fmt.Fprintf(a.stdout, "gvisor:  %s (%s)\n", v, p)
		}
		if p, err := runtime.FindBinary(agentPath, "hutch-agent"); err != nil {
			fmt.Fprintf(a.stdout, "agent:   %v\n", err)
		} else if v, err := doctor.BinaryVersion(p); err != nil {
			fmt.Fprintf(a.stdout, "agent:   %v\n", err)
		} else {
			fmt.Fprintf(a.stdout, "agent:   %s (%s)\n", v, p)
		}
		return nil
	})
	return cmd
}
