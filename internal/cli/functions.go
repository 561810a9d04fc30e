package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/internal/safetext"
)

func (a *app) functionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "functions [FUNCTION_ID]",
		Short: "List the daemon's functions, or describe one: its request and response JSON Schemas",
		Args:  cobra.MaximumNArgs(1),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		c := a.client()
		if len(args) == 1 {
			info, err := c.Function(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(a.stdout, info)
		}
		list, err := c.Functions(cmd.Context())
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "FUNCTION", "DESCRIPTION")
		for _, f := range list.Functions {
			t.row(f.FunctionID, safetext.Line(strings.TrimSpace(f.Description), 100))
		}
		return t.flush()
	})
	return cmd
}
