package bench

import (
	"strings"
	"testing"
	"time"
)

func TestWriteMarkdown(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	header := "## sbx bench — 2026-01-02 03:04 UTC\n\n" +
		"- host: 2 CPUs, AMD EPYC, Linux 6.1.0, load 0.42 at start\n" +
		"- runsc: runsc version release-20260101.0\n" +
		"- daemon: http://127.0.0.1:3199, image `python`, 2 runs after 1 warm-up runs, client-side wall clock\n"
	base := Report{
		Started: started,
		Daemon:  "http://127.0.0.1:3199",
		Host:    Host{CPUs: 2, Kernel: "6.1.0", CPUModel: "AMD EPYC", Load: "0.42", Runsc: "runsc version release-20260101.0"},
		Image:   "python",
		Runs:    2,
		Warmup:  1,
	}
	latency := func(name, title string, vals ...float64) Result {
		s := Summarize(msList(vals...))
		return Result{Name: name, Title: title, Latency: &s}
	}
	throughput := Result{Name: NameExecThroughput, Title: "exec throughput", Throughput: &Throughput{
		Sandboxes: 8, Callers: 2, Execs: 1000, Elapsed: 5 * time.Second, PerSec: 200, Latency: Summarize(msList(10, 20)),
	}}
	withResults := func(results ...Result) Report {
		r := base
		r.Results = results
		return r
	}

	tests := []struct {
		name   string
		report Report
		want   string
	}{
		{
			name: "every kind of result",
			report: withResults(
				latency(NameExecTrue, "exec true (HTTP)", 6, 8),
				latency(NameSpawnFloor, "spawn floor (posix_spawn in sandbox)", 0.5, 1.5),
				throughput,
			),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms |
|---|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |
| spawn floor (posix_spawn in sandbox) | 2 | 1.00 | 1.40 | 1.49 | 0.50 | 1.00 |

| scenario | sandboxes × callers | duration | execs | execs/s | p50 ms | p99 ms |
|---|--:|--:|--:|--:|--:|--:|
| exec throughput | 8 × 2 | 5.00 s | 1000 | 200.0 | 15.00 | 19.90 |

**vs floor:** exec true p50 7.00 ms − spawn floor p50 1.00 ms = **6.00 ms** added by sbx per exec
`,
		},
		{
			name: "no floor, no overhead line",
			report: withResults(
				latency(NameExecTrue, "exec true (HTTP)", 6, 8),
			),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms |
|---|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |
`,
		},
		{
			name: "a failed floor is listed, not compared",
			report: withResults(
				latency(NameExecTrue, "exec true (HTTP)", 6, 8),
				Result{Name: NameSpawnFloor, Title: "spawn floor (posix_spawn in sandbox)", Err: "exec python3: exited with status 127:\nnot | found"},
			),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms |
|---|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |

Failed:
- spawn floor (posix_spawn in sandbox): exec python3: exited with status 127: not | found
`,
		},
		{
			name:   "unknown machine facts",
			report: Report{Started: started, Daemon: "http://x", Image: "node", Runs: 1},
			want: "## sbx bench — 2026-01-02 03:04 UTC\n\n" +
				"- host: 0 CPUs, unknown, Linux unknown, load unknown at start\n" +
				"- runsc: not found next to sbx\n" +
				"- daemon: http://x, image `node`, 1 runs after 0 warm-up runs, client-side wall clock\n",
		},
		{
			name:   "a pipe in a title is escaped",
			report: withResults(latency("x", "a | b", 1)),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms |
|---|--:|--:|--:|--:|--:|--:|
| a \| b | 1 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.report.WriteMarkdown(&b); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("WriteMarkdown:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
