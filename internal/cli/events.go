package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

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

func (a *app) alertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alert",
		Short: "Watch sandboxes' resource use and act on it (create, ls, rm, history)",
		Args:  cobra.NoArgs,
	}
	var req api.AlertCreateRequest
	create := &cobra.Command{
		Use:   "create ID",
		Short: "Alert when a sandbox's --metric stays --above a threshold --for a while; prints the alert id",
		Args:  cobra.ExactArgs(1),
	}
	fl := create.Flags()
	fl.StringVar(&req.Metric, "metric", "", "cpu (% of one CPU), memory (MiB), pids or disk (MiB of written files)")
	fl.Float64Var(&req.Threshold, "above", 0, "the threshold, in the metric's unit")
	fl.Uint64Var(&req.ForSecs, "for", 0, "seconds the metric must stay above it")
	fl.StringVar(&req.Action, "action", "", "notify (an event; the default), pause or stop")
	create.RunE = action(func(cmd *cobra.Command, args []string) error {
		req.SandboxID = args[0]
		info, err := a.client().CreateAlert(cmd.Context(), req)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, info.AlertID)
		return nil
	})
	var sandbox string
	ls := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List your alerts", Args: cobra.NoArgs}
	ls.Flags().StringVar(&sandbox, "sandbox", "", "only this sandbox's")
	ls.RunE = action(func(cmd *cobra.Command, _ []string) error {
		list, err := a.client().ListAlerts(cmd.Context(), sandbox)
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "ID", "SANDBOX", "METRIC", "ABOVE", "FOR", "ACTION", "FIRING")
		for _, al := range list.Alerts {
			t.row(al.AlertID, al.SandboxID, al.Metric, fmt.Sprint(al.Threshold), fmt.Sprintf("%ds", al.ForSecs), al.Action, fmt.Sprint(al.Firing))
		}
		return t.flush()
	})
	rm := &cobra.Command{Use: "rm ALERT...", Short: "Delete alerts", Args: cobra.MinimumNArgs(1)}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		for _, id := range args {
			if _, err := a.client().DeleteAlert(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, id)
		}
		return nil
	})
	history := &cobra.Command{Use: "history", Short: "The alerts that fired", Args: cobra.NoArgs}
	history.Flags().StringVar(&sandbox, "sandbox", "", "only this sandbox's")
	history.RunE = action(func(cmd *cobra.Command, _ []string) error {
		h, err := a.client().AlertHistory(cmd.Context(), sandbox)
		if err != nil {
			return err
		}
		for _, e := range h.Events {
			if err := printEvent(a.stdout, e, false); err != nil {
				return err
			}
		}
		return nil
	})
	cmd.AddCommand(create, ls, rm, history)
	return cmd
}

func (a *app) webhookCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Send events to HTTP endpoints: add, ls, rm, deliveries (an operator's)",
		Args:  cobra.NoArgs,
	}
	var req api.WebhookCreateRequest
	add := &cobra.Command{
		Use:   "add URL --events TYPES --secret SECRET",
		Short: "POST each event of the types named to URL, signed with SECRET; prints the webhook id",
		Args:  cobra.ExactArgs(1),
	}
	add.Flags().StringSliceVar(&req.Events, "events", nil, "event types or patterns, comma-separated (sandbox.*, job.finished, *)")
	add.Flags().StringVar(&req.Secret, "secret", "", "signs each delivery (Hutch-Signature: sha256=HMAC); at least 16 characters")
	add.RunE = action(func(cmd *cobra.Command, args []string) error {
		req.URL = args[0]
		info, err := a.client().CreateWebhook(cmd.Context(), req)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, info.WebhookID)
		return nil
	})
	ls := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List the webhooks, configured and added", Args: cobra.NoArgs}
	ls.RunE = action(func(cmd *cobra.Command, _ []string) error {
		list, err := a.client().ListWebhooks(cmd.Context())
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "ID", "URL", "EVENTS", "CONFIGURED")
		for _, h := range list.Webhooks {
			t.row(h.WebhookID, safetext.Line(h.URL, 80), safetext.Line(strings.Join(h.Events, ","), 60), fmt.Sprint(h.Configured))
		}
		return t.flush()
	})
	rm := &cobra.Command{Use: "rm WEBHOOK...", Short: "Delete webhooks added at run time", Args: cobra.MinimumNArgs(1)}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		for _, id := range args {
			if _, err := a.client().DeleteWebhook(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, id)
		}
		return nil
	})
	deliveries := &cobra.Command{Use: "deliveries", Short: "The latest deliveries, newest first", Args: cobra.NoArgs}
	deliveries.RunE = action(func(cmd *cobra.Command, _ []string) error {
		list, err := a.client().WebhookDeliveries(cmd.Context())
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "TIME", "WEBHOOK", "EVENT", "TYPE", "ATTEMPTS", "DELIVERED", "ERROR")
		for _, d := range list.Deliveries {
			t.row(d.Time, d.WebhookID, d.EventID, safetext.Line(d.Type, 40), strconv.Itoa(d.Attempts), fmt.Sprint(d.Delivered), safetext.Line(tagOrDash(d.Error), 80))
		}
		return t.flush()
	})
	cmd.AddCommand(add, ls, rm, deliveries)
	return cmd
}
