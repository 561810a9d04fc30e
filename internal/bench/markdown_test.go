package bench

import (
	"strings"
	"testing"
	"time"
)

func TestWriteMarkdown(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	header := "## hutch bench — 2026-01-02 03:04 UTC\n\n" +
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
		CPU: []CPUShare{{Class: classSentry, MsPerExec: 5.5}, {Class: classDaemon, MsPerExec: 0.25}, {Class: "total", MsPerExec: 5.75}},
	}}
	memory := func(name, title string, mibs ...uint64) Result {
		var sizes []uint64
		for _, m := range mibs {
			sizes = append(sizes, m<<20)
		}
		s := SummarizeSizes(sizes)
		return Result{Name: name, Title: title, Memory: &s}
	}
	vs := func(v float64) *float64 { return &v }
	withBaselines := func(res Result, ratio *float64, baselines ...Result) Result {
		res.Baselines, res.VsDocker = baselines, ratio
		return res
	}
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
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |  |
| spawn floor (posix_spawn in sandbox) | 2 | 1.00 | 1.40 | 1.49 | 0.50 | 1.00 |  |

| scenario | sandboxes × callers | duration | execs | execs/s | p50 ms | p99 ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| exec throughput | 8 × 2 | 5.00 s | 1000 | 200.0 | 15.00 | 19.90 |  |

**Host CPU per exec** (all processes of each class, during the timed window):
- exec throughput: gVisor Sentry (runsc-sandbox) 5.50 ms, hutch daemon 0.25 ms, total 5.75 ms

**vs floor:** exec true p50 7.00 ms − spawn floor p50 1.00 ms = **6.00 ms** added by hutch per exec
`,
		},
		{
			name: "a floor with execs in rounds",
			report: withResults(
				func() Result {
					r := latency(NameSpawnFloor, "spawn floor (posix_spawn in sandbox)", 4, 6)
					r.Floor = &FloorPairs{Exec: Summarize(msList(6, 9)), Added: Summarize(msList(2, 3))}
					return r
				}(),
			),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| spawn floor (posix_spawn in sandbox) | 2 | 5.00 | 5.80 | 5.98 | 4.00 | 5.00 |  |

**vs floor:** execs of true over HTTP and spawn floor samples timed in rounds of 3 in one sandbox: exec p50 7.50 ms, floor p50 5.00 ms; the median over the rounds of exec p50 − floor p50 is **2.50 ms** added by hutch per exec
`,
		},
		{
			name: "loads of creates",
			report: withResults(
				Result{Name: NameCreateBurst, Title: "creates at once", Loads: []CreateLoad{
					{Load: "10 at once", Creates: 30, Rounds: 3, PerSec: 8.5, Latency: Summarize(msList(400, 800))},
					{Load: "10 at once", Pool: true, Creates: 30, Rounds: 3, PerSec: 12, FromPool: 6, Latency: Summarize(msList(20, 600))},
				}},
				Result{Name: NameCreateSteady, Title: "steady creates", Loads: []CreateLoad{
					{Load: "2/s for 30s", Pool: true, Creates: 60, PerSec: 2, FromPool: 57, Latency: Summarize(msList(30, 40))},
				}},
			),
			want: header + `
| scenario | load | pool | creates | creates/s | from pool | p50 ms | p90 ms | p99 ms | max ms |
|---|---|---|--:|--:|--:|--:|--:|--:|--:|
| creates at once | 10 at once | off | 30 | 8.50 | 0 (0 %) | 600.00 | 760.00 | 796.00 | 800.00 |
| creates at once | 10 at once | on | 30 | 12.00 | 6 (20 %) | 310.00 | 542.00 | 594.20 | 600.00 |
| steady creates | 2/s for 30s | on | 60 | 2.00 | 57 (95 %) | 35.00 | 39.00 | 39.90 | 40.00 |
`,
		},
		{
			name: "no floor, no overhead line",
			report: withResults(
				latency(NameExecTrue, "exec true (HTTP)", 6, 8),
			),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |  |
`,
		},
		{
			name: "a failed floor is listed, not compared",
			report: withResults(
				latency(NameExecTrue, "exec true (HTTP)", 6, 8),
				Result{Name: NameSpawnFloor, Title: "spawn floor (posix_spawn in sandbox)", Err: "exec python3: exited with status 127:\nnot | found"},
			),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |  |

Failed:
- spawn floor (posix_spawn in sandbox): exec python3: exited with status 127: not | found
`,
		},
		{
			name: "baselines, ratios, memory, capacity, notes and skips",
			report: func() Report {
				r := withResults(
					withBaselines(latency(NameCreateExec, "create→first exec (cold)", 100, 140), vs(2.5),
						latency(baselineDocker, "docker: create+start+exec true", 250, 350),
						latency(baselineRunscDo, "runsc do true", 90, 110)),
					Result{Name: NamePoolCreateExec, Title: "create→first exec (warm pool)", Skipped: "no warm pool"},
					withBaselines(Result{Name: NameExecThroughput, Title: "exec throughput", Err: "exec true: boom"}, nil,
						Result{Name: baselineDocker, Title: "docker: exec true", Throughput: &Throughput{
							Sandboxes: 8, Callers: 2, Execs: 100, Elapsed: 5 * time.Second, PerSec: 20, Latency: Summarize(msList(50, 60))}}),
					withBaselines(memory(NameIdleMemory, "host memory per idle sandbox (PSS)", 30, 32), vs(0.2),
						memory(baselineDocker, "docker: memory per idle container", 6, 6)),
					Result{Name: NameIdleCapacity, Title: "idle sandboxes held", Capacity: &Capacity{
						Held: 120, Limit: "the scenario's cap (--max-idle 120)", Creates: Summarize(msList(100, 300)),
						MemAvailableDrop: 40 << 20, PSS: SummarizeSizes([]uint64{30 << 20})}},
					withBaselines(latency(NameFsSmall, "fs 1 MiB", 5, 7), nil,
						Result{Name: baselineDocker, Title: "docker: archive", Skipped: "no Docker Engine socket at /x"}),
				)
				r.Results[0].Note = "creates ask for\nmore memory"
				r.Docker = "Docker Engine 20.10.24 (API 1.41)"
				return r
			}(),
			want: "## hutch bench — 2026-01-02 03:04 UTC\n\n" +
				"- host: 2 CPUs, AMD EPYC, Linux 6.1.0, load 0.42 at start\n" +
				"- runsc: runsc version release-20260101.0\n" +
				"- docker: Docker Engine 20.10.24 (API 1.41)\n" +
				"- daemon: http://127.0.0.1:3199, image `python`, 2 runs after 1 warm-up runs, client-side wall clock\n" + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| create→first exec (cold) | 2 | 120.00 | 136.00 | 139.60 | 100.00 | 120.00 | 2.50 |
| ↳ docker: create+start+exec true | 2 | 300.00 | 340.00 | 349.00 | 250.00 | 300.00 |  |
| ↳ runsc do true | 2 | 100.00 | 108.00 | 109.80 | 90.00 | 100.00 |  |
| fs 1 MiB | 2 | 6.00 | 6.80 | 6.98 | 5.00 | 6.00 |  |

| scenario | sandboxes × callers | duration | execs | execs/s | p50 ms | p99 ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| exec throughput | — | — | — | — | — | — | — |
| ↳ docker: exec true | 8 × 2 | 5.00 s | 100 | 20.0 | 55.00 | 59.90 |  |

| scenario | n | p50 MiB | p90 MiB | p99 MiB | min MiB | mean MiB | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| host memory per idle sandbox (PSS) | 2 | 31.0 | 31.8 | 32.0 | 30.0 | 31.0 | 0.20 |
| ↳ docker: memory per idle container | 2 | 6.0 | 6.0 | 6.0 | 6.0 | 6.0 |  |

**idle sandboxes held:** 120, creates p50 200.00 ms, p99 298.00 ms; stopped by the scenario's cap (--max-idle 120); PSS per sandbox p50 30.0 MiB, host MemAvailable fell 40.0 MiB per sandbox

` + ratioLegend + `

Notes:
- create→first exec (cold): creates ask for more memory

Skipped:
- create→first exec (warm pool): no warm pool
- fs 1 MiB ↳ docker: archive: no Docker Engine socket at /x

Failed:
- exec throughput: exec true: boom
`,
		},
		{
			name: "the host reference and ratios to it",
			report: func() Report {
				r := withResults(latency(NameExecTrue, "exec true (HTTP)", 6, 8))
				r.Host.LoadEnd = "1.50"
				r.Reference = &Reference{
					Start: HostRef{Spawn: Summarize(msList(0.8, 1.2)), PipeOneCPU: Summarize(msList(0.004, 0.006)), PipeTwoCPUs: Summarize(msList(0.09, 0.11))},
					End:   HostRef{Spawn: Summarize(msList(1.1, 1.3)), Err: "pipe round trip: exec: \"cat\": executable file not found in $PATH"},
				}
				r.VsHost = r.compareWithHost()
				return r
			}(),
			want: "## hutch bench — 2026-01-02 03:04 UTC\n\n" +
				"- host: 2 CPUs, AMD EPYC, Linux 6.1.0, load 0.42 at start, 1.50 at end\n" +
				"- runsc: runsc version release-20260101.0\n" +
				"- daemon: http://127.0.0.1:3199, image `python`, 2 runs after 1 warm-up runs, client-side wall clock\n" + `
**Host reference**, measured by the bench on its own host at the start and end of the run (spawn: fork+exec+wait of ` + "`/bin/true`" + `; pipe round trip: one byte to a ` + "`cat`" + ` process and back, the two pinned to one CPU or to two, each sample the mean of 50):

| host reference | when | load | n | p50 µs | p90 µs | min µs | max µs |
|---|---|--:|--:|--:|--:|--:|--:|
| host spawn of /bin/true | start | 0.42 | 2 | 1000.0 | 1160.0 | 800.0 | 1200.0 |
| host spawn of /bin/true | end | 1.50 | 2 | 1200.0 | 1280.0 | 1100.0 | 1300.0 |
| pipe round trip on one CPU | start | 0.42 | 2 | 5.0 | 5.8 | 4.0 | 6.0 |
| pipe round trip across two CPUs | start | 0.42 | 2 | 100.0 | 108.0 | 90.0 | 110.0 |

- host reference at the end: pipe round trip: exec: "cat": executable file not found in $PATH

| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| exec true (HTTP) | 2 | 7.00 | 7.80 | 7.98 | 6.00 | 7.00 |  |

**× host reference** (p50 over the reference's p50, its start and end samples together; how many of this host's own process starts or pipe round trips each costs):
- exec true (HTTP): 7.00 ms = 6.1 × host spawn (1.15 ms)
`,
		},
		{
			name:   "unknown machine facts",
			report: Report{Started: started, Daemon: "http://x", Image: "node", Runs: 1},
			want: "## hutch bench — 2026-01-02 03:04 UTC\n\n" +
				"- host: 0 CPUs, unknown, Linux unknown, load unknown at start\n" +
				"- runsc: not found next to hutch\n" +
				"- daemon: http://x, image `node`, 1 runs after 0 warm-up runs, client-side wall clock\n",
		},
		{
			name:   "a pipe in a title is escaped",
			report: withResults(latency("x", "a | b", 1)),
			want: header + `
| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |
|---|--:|--:|--:|--:|--:|--:|--:|
| a \| b | 1 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |  |
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
