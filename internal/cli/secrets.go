package cli

import (
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
)

// maxSecretInput bounds a secret read from stdin.
const maxSecretInput = 16 << 10

// secretCmd is `hutch secret` (issue 37): owners' secrets for egress
// transforms. A value is read from stdin, never taken as an argument
// (arguments are in every process list).
func (a *app) secretCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "secret", Short: "Secrets that egress transforms write into sandboxes' requests (never visible inside)"}
	set := &cobra.Command{Use: "set NAME", Short: "Store a secret, its value read from stdin (one trailing newline dropped)", Args: cobra.ExactArgs(1)}
	set.RunE = action(func(cmd *cobra.Command, args []string) error {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxSecretInput+1))
		if err != nil {
			return err
		}
		if len(b) > maxSecretInput {
			return errors.New("the secret on stdin is too long")
		}
		value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		info, err := a.client().SetSecret(cmd.Context(), args[0], value)
		if err != nil {
			return err
		}
		return printJSON(a.stdout, info)
	})
	ls := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List your secrets (names and placeholders, never values)", Args: cobra.NoArgs}
	ls.RunE = action(func(cmd *cobra.Command, _ []string) error {
		list, err := a.client().ListSecrets(cmd.Context())
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "NAME", "PLACEHOLDER", "UPDATED")
		for _, s := range list.Secrets {
			t.row(s.Name, s.Placeholder, s.UpdatedAt)
		}
		return t.flush()
	})
	rm := &cobra.Command{Use: "rm NAME", Aliases: []string{"delete"}, Short: "Delete a secret", Args: cobra.ExactArgs(1)}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		_, err := a.client().DeleteSecret(cmd.Context(), args[0])
		return err
	})
	cmd.AddCommand(set, ls, rm)
	return cmd
}

// transformFlag is --transform HOST:HEADER=VALUE (repeatable): a header
// the egress proxy writes into the sandbox's HTTPS requests to HOST;
// headers of one host gather in one transform.
type transformFlag struct{ list *[]api.EgressTransform }

func (f transformFlag) String() string { return "" }
func (f transformFlag) Type() string   { return "stringArray" }

func (f transformFlag) Set(s string) error {
	host, header, ok := strings.Cut(s, ":")
	name, value, ok2 := strings.Cut(header, "=")
	if !ok || !ok2 || host == "" || name == "" {
		return errors.New(`want HOST:HEADER=VALUE, e.g. 'api.openai.com:Authorization=Bearer {{secret.OPENAI_KEY}}'`)
	}
	for i := range *f.list {
		if t := &(*f.list)[i]; t.Host == host {
			t.Headers[name] = value
			return nil
		}
	}
	*f.list = append(*f.list, api.EgressTransform{Host: host, Headers: map[string]string{name: value}})
	return nil
}
