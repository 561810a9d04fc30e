package bench

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteMarkdown renders the report: a header with the machine and the
// settings, a latency table, a throughput table, the overhead over the
// spawn floor, and the scenarios that failed. Times are in milliseconds.
func (r Report) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("## sbx bench — %s\n\n", r.Started.Format("2006-01-02 15:04 MST"))
	p("- host: %d CPUs, %s, Linux %s, load %s at start\n", r.Host.CPUs, orUnknown(r.Host.CPUModel), orUnknown(r.Host.Kernel), orUnknown(r.Host.Load))
	p("- runsc: %s\n", or(r.Host.Runsc, "not found next to sbx"))
	p("- daemon: %s, image `%s`, %d runs after %d warm-up runs, client-side wall clock\n", r.Daemon, r.Image, r.Runs, r.Warmup)

	var lat, thr, failed []Result
	for _, res := range r.Results {
		switch {
		case res.Err != "":
			failed = append(failed, res)
		case res.Latency != nil:
			lat = append(lat, res)
		case res.Throughput != nil:
			thr = append(thr, res)
		}
	}
	if len(lat) > 0 {
		p("\n| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms |\n")
		p("|---|--:|--:|--:|--:|--:|--:|\n")
		for _, res := range lat {
			s := res.Latency
			p("| %s | %d | %s | %s | %s | %s | %s |\n", cell(res.Title), len(s.Samples),
				fmtMs(s.P50), fmtMs(s.P90), fmtMs(s.P99), fmtMs(s.Min), fmtMs(s.Mean))
		}
	}
	if len(thr) > 0 {
		p("\n| scenario | sandboxes × callers | duration | execs | execs/s | p50 ms | p99 ms |\n")
		p("|---|--:|--:|--:|--:|--:|--:|\n")
		for _, res := range thr {
			t := res.Throughput
			p("| %s | %d × %d | %.2f s | %d | %.1f | %s | %s |\n", cell(res.Title), t.Sandboxes, t.Callers,
				t.Elapsed.Seconds(), t.Execs, t.PerSec, fmtMs(t.Latency.P50), fmtMs(t.Latency.P99))
		}
	}
	if exec, floor, d, ok := r.Overhead(); ok {
		p("\n**vs floor:** exec true p50 %s ms − spawn floor p50 %s ms = **%s ms** added by sbx per exec\n",
			fmtMs(exec), fmtMs(floor), fmtMs(d))
	}
	if len(failed) > 0 {
		p("\nFailed:\n")
		for _, res := range failed {
			p("- %s: %s\n", res.Title, oneLine(res.Err))
		}
	}
	return bw.Flush()
}

// fmtMs renders d in milliseconds with two decimals.
func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2f", ms(d)) }

// cell escapes s for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

// oneLine folds s onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func orUnknown(s string) string { return or(s, "unknown") }
