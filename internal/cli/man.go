package cli

// issue 41: man pages generated from the command tree.

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func (a *app) manCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "man",
		Short: "Write a man page of every hutch command (section 1)",
		Long: `Write a man page of every hutch command into --dir (hutch.1,
hutch-serve.1, ...), generated from the commands' own help. The package
installs them under /usr/share/man/man1.`,
		Args:   cobra.NoArgs,
		Hidden: true,
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write the pages into")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		root := cmd.Root()
		root.DisableAutoGenTag = true
		hdr := &doc.GenManHeader{Title: "HUTCH", Section: "1", Source: "hutch " + Version, Manual: "hutch manual"}
		if err := doc.GenManTree(root, hdr, dir); err != nil {
			return fmt.Errorf("writing man pages: %w", err)
		}
		return nil
	})
	return cmd
}
