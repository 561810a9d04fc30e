package cli

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// envCmd is `hutch env`: a running sandbox's base environment.
func (a *app) envCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "env", Short: "A running sandbox's environment, for its later execs and processes"}
	var all bool
	ls := &cobra.Command{Use: "ls ID", Aliases: []string{"list"}, Short: "Print the sandbox's own variables (--all: what execs start from)", Args: cobra.ExactArgs(1)}
	ls.Flags().BoolVar(&all, "all", false, "the effective environment: the image's, then the sandbox's")
	ls.RunE = action(func(cmd *cobra.Command, args []string) error {
		env, err := a.client().ListEnv(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		vars := env.Env
		if all {
			vars = env.Effective
		}
		a.printEnv(vars)
		return nil
	})
	get := &cobra.Command{Use: "get ID KEY", Short: "Print one variable (exit 1 when it is not set)", Args: cobra.ExactArgs(2)}
	get.RunE = action(func(cmd *cobra.Command, args []string) error {
		v, err := a.client().GetEnv(cmd.Context(), args[0], args[1])
		if err != nil {
			return err
		}
		if !v.Set {
			return &exitError{1}
		}
		fmt.Fprintln(a.stdout, safetext.Escape(v.Value))
		return nil
	})
	set := &cobra.Command{Use: "set ID KEY=VALUE...", Short: "Add or replace variables (running processes keep theirs)", Args: cobra.MinimumNArgs(2)}
	set.RunE = action(func(cmd *cobra.Command, args []string) error {
		_, err := a.client().SetEnv(cmd.Context(), args[0], api.Env(args[1:]))
		return err
	})
	rm := &cobra.Command{Use: "rm ID KEY...", Short: "Remove variables (one of the image's goes back to the image's value)", Args: cobra.MinimumNArgs(2)}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		for _, k := range args[1:] {
			if _, err := a.client().DeleteEnv(cmd.Context(), args[0], k); err != nil {
				return err
			}
		}
		return nil
	})
	cmd.AddCommand(ls, get, set, rm)
	return cmd
}

// printEnv prints vars as KEY=VALUE lines, sorted, values escaped.
func (a *app) printEnv(vars map[string]string) {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(a.stdout, "%s=%s\n", k, safetext.Escape(vars[k]))
	}
}
