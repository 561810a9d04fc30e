package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// fsWatchCmd is `hutch fs watch ID DIR`: one line per change until ^C.
func (a *app) fsWatchCmd(out func(any, func() error) error) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{Use: "watch ID DIR", Short: "Print the changes under a directory as they happen (until ^C)", Args: cobra.ExactArgs(2)}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "the directories below it too")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		return a.client().WatchFiles(cmd.Context(), api.FsWatchRequest{SandboxID: args[0], User: a.fsUser, Path: args[1], Recursive: recursive}, func(e api.FsWatchEvent) error {
			return out(e, func() error {
				line := fmt.Sprintf("%-8s %s", e.Type, safetext.Escape(e.Path))
				if e.OldPath != "" {
					line += " (from " + safetext.Escape(e.OldPath) + ")"
				}
				_, err := fmt.Fprintln(a.stdout, line)
				return err
			})
		})
	})
	return cmd
}
