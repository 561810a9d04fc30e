package cli

import "github.com/spf13/cobra"

// opsCmds are the operator's commands (issue 41).
func (a *app) opsCmds() []*cobra.Command {
	return []*cobra.Command{a.doctorCmd(), a.versionCmd(), a.manCmd(), a.adminCmd()}
}
