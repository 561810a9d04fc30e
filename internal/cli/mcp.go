package cli

import (
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/mcpserver"
)

func (a *app) mcpCmd() *cobra.Command {
	var image, tools string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP over stdio (for an agent's MCP client config): tools that run code and commands and move files in sandboxes of the daemon at HUTCH_URL",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().StringVar(&image, "image", "", "image of the session's default sandbox (python)")
	cmd.Flags().StringVar(&tools, "tools", api.ToolSetDefault, "the tools offered: all, or default and areas, comma separated ("+strings.Join(api.ToolAreas, ", ")+")")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		if err := mcpserver.CheckTools(tools); err != nil {
			return usagef("--tools: %v", err)
		}
		c := a.client()
		// Like `hutch run`: no daemon at a loopback HUTCH_URL starts one.
		if err := c.Health(cmd.Context()); err != nil && client.IsUnreachable(err) && autoStartable(c.URL()) {
			if err := a.autoStart(cmd.Context(), c); err != nil {
				return err
			}
		}
		srv, stop, err := mcpserver.New(cmd.Context(), mcpserver.Client{C: c}, mcpserver.Options{Version: Version, DefaultImage: image, BaseURL: c.URL(), Tools: tools})
		if err != nil {
			return err
		}
		defer stop()
		err = srv.Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
		if cmd.Context().Err() != nil {
			return nil // interrupted: a normal end
		}
		return err
	})
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
