package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
)

// networkCmd is `hutch network`: sandbox networks and egress policies.
func (a *app) networkCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "network", Short: "Sandbox networks (members reach each other by name) and egress policies"}
	create := &cobra.Command{Use: "create NAME", Short: "Create a sandbox network", Args: cobra.ExactArgs(1)}
	create.RunE = action(func(cmd *cobra.Command, args []string) error {
		info, err := a.client().CreateNetwork(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return printJSON(a.stdout, info)
	})
	ls := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List your networks and their members", Args: cobra.NoArgs}
	ls.RunE = action(func(cmd *cobra.Command, _ []string) error {
		list, err := a.client().ListNetworks(cmd.Context())
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "NETWORK", "CREATED", "MEMBERS")
		for _, n := range list.Networks {
			var members []string
			for _, m := range n.Members {
				members = append(members, m.SandboxID+"="+m.Address)
			}
			t.row(n.Name, n.CreatedAt, tagOrDash(strings.Join(members, ",")))
		}
		return t.flush()
	})
	rm := &cobra.Command{Use: "rm NAME", Short: "Delete a network that has no members", Args: cobra.ExactArgs(1)}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		_, err := a.client().DeleteNetwork(cmd.Context(), args[0])
		return err
	})
	connect := &cobra.Command{Use: "connect NAME ID", Short: "Put a sandbox (created with --network) on a network", Args: cobra.ExactArgs(2)}
	connect.RunE = action(func(cmd *cobra.Command, args []string) error {
		_, err := a.client().ConnectNetwork(cmd.Context(), args[0], args[1])
		return err
	})
	disconnect := &cobra.Command{Use: "disconnect NAME ID", Short: "Take a sandbox off a network", Args: cobra.ExactArgs(2)}
	disconnect.RunE = action(func(cmd *cobra.Command, args []string) error {
		_, err := a.client().DisconnectNetwork(cmd.Context(), args[0], args[1])
		return err
	})
	var policy api.EgressPolicy
	update := &cobra.Command{Use: "policy ID", Short: "Replace a running sandbox's egress policy (no flags lift it); prints its network", Args: cobra.ExactArgs(1)}
	egressFlags(update, &policy)
	update.RunE = action(func(cmd *cobra.Command, args []string) error {
		out, err := a.client().UpdateNetwork(cmd.Context(), args[0], policy)
		if err != nil {
			return err
		}
		return printJSON(a.stdout, out)
	})
	cmd.AddCommand(create, ls, rm, connect, disconnect, update)
	return cmd
}

// egressFlags registers --allow-out, --deny-out and --transform into p.
func egressFlags(cmd *cobra.Command, p *api.EgressPolicy) {
	cmd.Flags().StringArrayVar(&p.AllowOut, "allow-out", nil, "reach only this outside (repeatable): IPv4 address or CIDR, host name or *.domain, each with an optional :port")
	cmd.Flags().StringArrayVar(&p.DenyOut, "deny-out", nil, "never reach this outside (repeatable; same forms as --allow-out; wins over it)")
	// issue 37
	cmd.Flags().Var(transformFlag{&p.Transforms}, "transform", "write a header into the sandbox's HTTPS requests to a host, `RULE` being HOST:HEADER=VALUE with {{secret.NAME}} for an owner secret (repeatable; see hutch secret)")
}
