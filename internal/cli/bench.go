package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sbx-dev/sbx/internal/bench"
)

func (a *app) benchCmd() *cobra.Command {
	opts := bench.Options{Progress: a.stderr}
	var scenarios, jsonOut string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure sandbox latency and exec throughput against the daemon at $SBX_URL",
		Long: "Measure sandbox latency and exec throughput against the daemon at $SBX_URL.\n" +
			"Prints a Markdown table on stdout and writes the samples as JSON to --json-out.\n" +
			"Scenarios: " + strings.Join(bench.Names(), ", ") + ".",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Image, "image", "python", "catalog image of the sandboxes")
	fl.IntVar(&opts.Runs, "runs", 30, "timed runs of each latency scenario")
	fl.IntVar(&opts.Warmup, "warmup", 3, "untimed runs before the timed ones")
	fl.StringVar(&scenarios, "scenarios", strings.Join(bench.Names(), ","), "comma-separated scenarios to run")
	fl.IntVar(&opts.Sandboxes, "sandboxes", 8, "sandboxes of the throughput scenario")
	fl.IntVar(&opts.Callers, "callers", 2, "concurrent callers per sandbox in the throughput scenario")
	fl.DurationVar(&opts.Duration, "duration", 5*time.Second, "length of the throughput scenario")
	fl.StringVar(&jsonOut, "json-out", "bench-results.json", `write the results as JSON to this file ("" skips it)`)
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		sel, err := bench.Select(strings.Split(scenarios, ","))
		if err != nil {
			return usagef("--scenarios: %v", err)
		}
		if err := opts.Validate(); err != nil {
			return usagef("%v", err)
		}
		opts.RunscPath = runscNextToSelf()
		rep, err := bench.Run(cmd.Context(), a.client(), opts, sel)
		if err != nil {
			return err
		}
		if err := rep.WriteMarkdown(a.stdout); err != nil {
			return err
		}
		if jsonOut != "" {
			b, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				return fmt.Errorf("encoding results: %w", err)
			}
			if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
				return fmt.Errorf("writing results: %w", err)
			}
			fmt.Fprintf(a.stderr, "bench: results written to %s\n", jsonOut)
		}
		if rep.Failed() {
			return fmt.Errorf("some scenarios failed (listed under Failed)")
		}
		return nil
	})
	return cmd
}

// runscNextToSelf is the runsc binary beside this one, as `make build`
// lays them out; "" when this binary's path is unknown.
func runscNextToSelf() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(self), "runsc")
}
