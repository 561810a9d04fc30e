package cli

// issue 41: `hutch admin`, the operator's commands.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) adminCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Operator commands: reload the config, back up and restore",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.adminReloadCmd())
	cmd.AddCommand(a.adminBackupCmd(), a.adminRestoreCmd()) // issue 41: 5
	return cmd
}

func (a *app) adminReloadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reload",
		Short: "Make the daemon read its config file and TLS files again",
		Long: `Make the daemon read its config file (and its TLS certificate and key)
again, as SIGHUP does. api_tokens, local_socket_owner, webhooks and tls
change live; any other key that changed is named as needing a restart and
keeps its old value. A file that does not load changes nothing.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			res, err := a.client().AdminReload(cmd.Context())
			if err != nil {
				return err
			}
			if !res.ConfigReloaded {
				fmt.Fprintln(a.stdout, "the daemon runs without a config file (hutch serve --config): nothing to read")
			}
			if len(res.Applied) > 0 {
				fmt.Fprintln(a.stdout, "applied:", strings.Join(res.Applied, ", "))
			} else if res.ConfigReloaded {
				fmt.Fprintln(a.stdout, "applied: nothing changed")
			}
			if len(res.RestartNeeded) > 0 {
				fmt.Fprintln(a.stdout, "needs a restart (old values kept):", strings.Join(res.RestartNeeded, ", "))
			}
			if res.TLSReloaded {
				fmt.Fprintln(a.stdout, "tls: certificate and key read again")
			}
			return nil
		}),
	}
}
