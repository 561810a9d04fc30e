package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

func (a *app) exposeCmd() *cobra.Command {
	var req api.PortExposeRequest
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "expose ID PORT",
		Short: "Make a port of a sandbox reachable through hutch's listener; prints its preview URL",
		Args:  cobra.ExactArgs(2),
	}
	cmd.Flags().BoolVar(&req.Public, "public", false, "reachable without your token, through a URL with a token of its own")
	cmd.Flags().DurationVar(&expires, "expires", 0, "a public URL stops working after this long")
	cmd.Flags().StringSliceVar(&req.CORS, "cors", nil, "origins whose pages may call the port (comma-separated, or *)")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		port, err := portArg(args[1])
		if err != nil {
			return err
		}
		req.SandboxID, req.Port, req.ExpiresInSecs = args[0], port, uint64(expires.Seconds())
		c := a.client()
		info, err := c.ExposePort(cmd.Context(), req)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, c.URL()+info.URL)
		if info.HostURL != "" {
			fmt.Fprintf(a.stderr, "hutch: by host name (a browser's): %s\n", info.HostURL)
		}
		return nil
	})
	return cmd
}

func (a *app) portsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "ports ID", Short: "List a sandbox's exposed ports and their preview URLs (by path, and by host name with preview_domain)", Args: cobra.ExactArgs(1)}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		c := a.client()
		list, err := c.ListPorts(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "PORT", "PUBLIC", "EXPIRES", "URL", "HOST URL")
		for _, p := range list.Ports {
			t.row(strconv.Itoa(p.Port), fmt.Sprint(p.Public), tagOrDash(p.ExpiresAt), c.URL()+p.URL, tagOrDash(p.HostURL))
		}
		return t.flush()
	})
	return cmd
}

func (a *app) unexposeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "unexpose ID PORT", Short: "Make an exposed port unreachable again", Args: cobra.ExactArgs(2)}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		port, err := portArg(args[1])
		if err != nil {
			return err
		}
		_, err = a.client().UnexposePort(cmd.Context(), args[0], port)
		return err
	})
	return cmd
}

func (a *app) portForwardCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "port-forward ID [LOCAL:]REMOTE",
		Short: "Listen on a local port and carry each connection, as raw TCP, to the sandbox's port (exposing it to you if it is not)",
		Args:  cobra.ExactArgs(2),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		local, remote, ok := strings.Cut(args[1], ":")
		if !ok {
			remote = local
		}
		lport, err := portArg(local)
		if err != nil {
			return err
		}
		rport, err := portArg(remote)
		if err != nil {
			return err
		}
		c := a.client()
		ctx := cmd.Context()
		if err := ensureExposed(ctx, c, args[0], rport); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lport)))
		if err != nil {
			return err
		}
		defer ln.Close()
		context.AfterFunc(ctx, func() { ln.Close() })
		fmt.Fprintf(a.stderr, "hutch: forwarding %s to port %d of %s\n", ln.Addr(), rport, args[0])
		for {
			conn, err := ln.Accept()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			go forwardConn(ctx, c, args[0], rport, conn, a.stderr)
		}
	})
	return cmd
}

// ensureExposed exposes port of sandbox id to its owner unless it is.
func ensureExposed(ctx context.Context, c *client.Client, id string, port int) error {
	list, err := c.ListPorts(ctx, id)
	if err != nil {
		return err
	}
	for _, p := range list.Ports {
		if p.Port == port {
			return nil
		}
	}
	_, err = c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: port})
	return err
}

// forwardConn carries one local connection to the sandbox's port.
func forwardConn(ctx context.Context, c *client.Client, id string, port int, local net.Conn, stderr io.Writer) {
	defer local.Close()
	remote, err := c.Forward(ctx, id, port)
	if err != nil {
		fmt.Fprintf(stderr, "hutch: %v\n", err)
		return
	}
	defer remote.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(remote, local); done <- struct{}{} }()
	go func() { _, _ = io.Copy(local, remote); done <- struct{}{} }()
	<-done
}

func portArg(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, usagef("%q is not a TCP port", s)
	}
	return n, nil
}
