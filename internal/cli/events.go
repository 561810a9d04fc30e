package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

func (a *app) eventsCmd() *cobra.Command {
	var req api.EventsRequest
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show what happened to your sandboxes (created, paused, exec finished, stopped and why); -f follows",
		Args:  cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.BoolVarP(&follow, "follow", "f", false, "go on printing events as they happen")
	fl.StringVar(&req.SandboxID, "sandbox", "", "only this sandbox's events")
	fl.StringVar(&req.Type, "type", "", "only events of this type or pattern (sandbox.*, exec.finished)")
	fl.StringVar(&req.Since, "since", "", "only events at or after this time (RFC 3339)")
	fl.BoolVar(&asJSON, "json", false, "print each event as a line of JSON")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		print := func(e api.EventRecord) error { return printEvent(a.stdout, e, asJSON) }
		if follow {
			return a.client().StreamEvents(cmd.Context(), req, print)
		}
		for {
			page, err := a.client().ListEvents(cmd.Context(), req)
			if err != nil {
				return err
			}
			for _, e := range page.Events {
				if err := print(e); err != nil {
					return err
				}
			}
			if page.Next == "" {
				return nil
			}
			req.After = page.Next
		}
	})
	return cmd
}

// printEvent prints e as a line: its time, type, sandbox and data, the
// data escaped (a sandbox or a caller chose it); or as JSON.
func printEvent(w io.Writer, e api.EventRecord, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	sandbox := e.SandboxID
	if sandbox == "" {
		sandbox = "-"
	}
	_, err := fmt.Fprintf(w, "%s  %-18s %s  %s\n", e.Time, safetext.Escape(e.Type), sandbox, safetext.Escape(string(e.Data)))
	return err
}
