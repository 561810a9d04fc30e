package bench

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// ratioLegend explains the "× vs docker" column.
const ratioLegend = "× vs docker: how many times faster (memory: smaller; throughput: more execs/s) hutch is than Docker in this run; below 1, Docker does better."

// runtimeLegend explains the table of the runtime scenarios.
const runtimeLegend = "Runtimes: the same measurement in each runtime, one after another in this run, on the same image and sandbox shape; every create boots a sandbox (no warm pool); memory is the PSS of all of a sandbox's host processes in each runtime. ÷: each runtime's p50 and p99 over the first runtime's; above 1, the first does better."

// table is one Markdown table of the report: results of one kind.
type table struct {
	header string
	rows   []string
	// placed lists the scenarios that have a row here.
	placed map[string]bool
}

// Columns of the three kinds of tables.
const (
	latencyHeader    = "| scenario | n | p50 ms | p90 ms | p99 ms | min ms | mean ms | × vs docker |\n|---|--:|--:|--:|--:|--:|--:|--:|\n"
	throughputHeader = "| scenario | sandboxes × callers | duration | execs | execs/s | p50 ms | p99 ms | × vs docker |\n|---|--:|--:|--:|--:|--:|--:|--:|\n"
	memoryHeader     = "| scenario | n | p50 MiB | p90 MiB | p99 MiB | min MiB | mean MiB | × vs docker |\n|---|--:|--:|--:|--:|--:|--:|--:|\n"
	loadHeader       = "| scenario | load | pool | creates | creates/s | from pool | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n"
)

// WriteMarkdown renders the report: a header with the machine and the
// settings, tables of latencies, throughputs and memory (each baseline
// under its scenario, marked ↳), the idle capacity, the overhead over the
// spawn floor, and notes, skipped and failed scenarios. Times are in
// milliseconds, memory in MiB.
func (r Report) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("## hutch bench — %s\n\n", r.Started.Format("2006-01-02 15:04 MST"))
	p("- host: %d CPUs, %s, Linux %s, load %s at start", r.Host.CPUs, orUnknown(r.Host.CPUModel), orUnknown(r.Host.Kernel), orUnknown(r.Host.Load))
	if r.Host.LoadEnd != "" {
		p(", %s at end", r.Host.LoadEnd)
	}
	p("\n")
	p("- runsc: %s\n", cmp.Or(r.Host.Runsc, "not found next to hutch"))
	if r.Docker != "" {
		p("- docker: %s\n", r.Docker)
	}
	p("- daemon: %s, image `%s`, %d runs after %d warm-up runs, client-side wall clock\n", r.Daemon, r.Image, r.Runs, r.Warmup)
	if len(r.Runtimes) > 0 {
		p("- runtimes: %s\n", runtimeList(r.Runtimes))
	}

	p("%s", r.referenceSection())

	tables := map[string]*table{
		kindLatency:    {header: latencyHeader, placed: map[string]bool{}},
		kindThroughput: {header: throughputHeader, placed: map[string]bool{}},
		kindMemory:     {header: memoryHeader, placed: map[string]bool{}},
		kindLoad:       {header: loadHeader, placed: map[string]bool{}},
	}
	var capacity, cpu, notes, skipped, failed, runtimeRows []string
	for _, res := range r.Results {
		cpu = append(cpu, cpuLines(res)...)
		if res.Runtime != nil {
			if res.kind() != "" {
				runtimeRows = append(runtimeRows, runtimeRow(res))
			}
		} else if t := tables[res.kind()]; t != nil {
			t.rows = append(t.rows, row(res.Title, res, res.VsDocker))
			t.placed[res.Name] = true
		}
		if c := res.Capacity; c != nil {
			capacity = append(capacity, capacityLine(res.Title, c))
		}
		if res.Note != "" && res.kind() != "" {
			notes = append(notes, fmt.Sprintf("- %s: %s\n", res.label(), oneLine(res.Note)))
		}
		switch {
		case res.Skipped != "":
			skipped = append(skipped, fmt.Sprintf("- %s: %s\n", res.label(), oneLine(res.Skipped)))
		case res.Err != "":
			failed = append(failed, fmt.Sprintf("- %s: %s\n", res.label(), oneLine(res.Err)))
		}
		for _, b := range res.Baselines {
			switch {
			case b.Skipped != "" && b.Name == baselineDocker && r.Docker == dockerMissing(b.Skipped):
				continue // said once, in the header
			case b.Skipped != "":
				skipped = append(skipped, fmt.Sprintf("- %s ↳ %s: %s\n", res.Title, b.Title, oneLine(b.Skipped)))
				continue
			case b.Err != "":
				failed = append(failed, fmt.Sprintf("- %s ↳ %s: %s\n", res.Title, b.Title, oneLine(b.Err)))
				continue
			}
			t := tables[b.kind()]
			if t == nil {
				continue
			}
			if !t.placed[res.Name] {
				// The scenario itself failed or measured another kind.
				t.rows = append(t.rows, "| "+cell(res.Title)+strings.Repeat(" | —", 7)+" |\n")
				t.placed[res.Name] = true
			}
			t.rows = append(t.rows, row("↳ "+b.Title, b, nil))
		}
	}
	for _, kind := range []string{kindLatency, kindThroughput, kindLoad, kindMemory} {
		if t := tables[kind]; len(t.rows) > 0 {
			p("\n%s%s", t.header, strings.Join(t.rows, ""))
		}
	}
	if len(runtimeRows) > 0 {
		p("\n%s%s\n%s\n", r.runtimeHeader(), strings.Join(runtimeRows, ""), runtimeLegend)
	}
	for _, line := range capacity {
		p("\n%s", line)
	}
	if len(cpu) > 0 {
		p("\n**Host CPU per exec** (all processes of each class, during the timed window):\n%s", strings.Join(cpu, ""))
	}
	if o, ok := r.Overhead(); ok {
		if o.Paired {
			p("\n**vs floor:** execs of true over HTTP and spawn floor samples timed in rounds of %d in one sandbox: exec p50 %s ms, floor p50 %s ms; the median over the rounds of exec p50 − floor p50 is **%s ms** added by hutch per exec\n",
				floorRound, fmtMs(o.Exec), fmtMs(o.Floor), fmtMs(o.Added))
		} else {
			p("\n**vs floor:** exec true p50 %s ms − spawn floor p50 %s ms = **%s ms** added by hutch per exec\n",
				fmtMs(o.Exec), fmtMs(o.Floor), fmtMs(o.Added))
		}
	}
	p("%s", r.vsHostSection())
	if r.hasDockerRatio() {
		p("\n%s\n", ratioLegend)
	}
	for _, list := range []struct {
		title string
		lines []string
	}{{"Notes", notes}, {"Skipped", skipped}, {"Failed", failed}} {
		if len(list.lines) > 0 {
			p("\n%s:\n%s", list.title, strings.Join(list.lines, ""))
		}
	}
	return bw.Flush()
}

// referenceHeader heads the table of the host reference.
const referenceHeader = "| host reference | when | load | n | p50 µs | p90 µs | min µs | max µs |\n|---|---|--:|--:|--:|--:|--:|--:|\n"

// referenceSection renders the host reference, each figure at the start
// and at the end of the run; "" without one.
func (r Report) referenceSection() string {
	if r.Reference == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n**Host reference**, measured by the bench on its own host at the start and end of the run (spawn: fork+exec+wait of `/bin/true`; pipe round trip: one byte to a `cat` process and back, the two pinned to one CPU or to two, each sample the mean of " + fmt.Sprint(pipeBatch) + "):\n\n")
	b.WriteString(referenceHeader)
	moments := []struct {
		when, load string
		ref        HostRef
	}{{"start", r.Host.Load, r.Reference.Start}, {"end", r.Host.LoadEnd, r.Reference.End}}
	var failed []string
	for _, fig := range []struct {
		title string
		stats func(HostRef) Stats
	}{
		{refSpawn + " of /bin/true", func(h HostRef) Stats { return h.Spawn }},
		{refPipeOne, func(h HostRef) Stats { return h.PipeOneCPU }},
		{refPipeTwo, func(h HostRef) Stats { return h.PipeTwoCPUs }},
	} {
		for _, at := range moments {
			s := fig.stats(at.ref)
			if len(s.Samples) == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s |\n", fig.title, at.when, orUnknown(at.load),
				len(s.Samples), fmtUs(s.P50), fmtUs(s.P90), fmtUs(s.Min), fmtUs(s.Max))
		}
	}
	for _, at := range moments {
		if at.ref.Err != "" {
			failed = append(failed, fmt.Sprintf("- host reference at the %s: %s\n", at.when, oneLine(at.ref.Err)))
		}
	}
	if len(failed) > 0 {
		b.WriteString("\n" + strings.Join(failed, ""))
	}
	return b.String()
}

// vsHostSection renders the run's figures over the host reference; ""
// without any.
func (r Report) vsHostSection() string {
	if len(r.VsHost) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n**× host reference** (p50 over the reference's p50, its start and end samples together; how many of this host's own process starts or pipe round trips each costs):\n")
	for _, v := range r.VsHost {
		fmt.Fprintf(&b, "- %s: %s ms = %.1f × %s (%s ms)\n", oneLine(v.Title), fmtMsF(v.P50Ms), v.Ratio, v.Of, fmtMsF(v.RefP50Ms))
	}
	return b.String()
}

// Kinds of results, by what they measured.
const (
	kindLatency    = "latency"
	kindThroughput = "throughput"
	kindMemory     = "memory"
	kindCapacity   = "capacity"
	kindLoad       = "load"
)

// kind says what res measured; "" when it measured nothing.
func (res Result) kind() string {
	switch {
	case res.Err != "" || res.Skipped != "":
		return ""
	case res.Latency != nil:
		return kindLatency
	case res.Throughput != nil:
		return kindThroughput
	case res.Memory != nil:
		return kindMemory
	case res.Capacity != nil:
		return kindCapacity
	case len(res.Loads) > 0:
		return kindLoad
	}
	return ""
}

// label is res's title, with the runtime it measured in.
func (res Result) label() string {
	if res.Runtime == nil {
		return res.Title
	}
	return res.Title + ", " + res.Runtime.String()
}

// runtimeHeader heads the table of the runtime scenarios; its ratio
// columns name the run's first runtime.
func (r Report) runtimeHeader() string {
	first := "the first runtime"
	for _, res := range r.Results {
		if res.VsRuntime != nil {
			first = res.VsRuntime.Of
			break
		}
	}
	return fmt.Sprintf("| scenario | runtime (mode) | n | p50 | p90 | p99 | min | p50 ÷ %[1]s | p99 ÷ %[1]s |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n", first)
}

// runtimeRow renders a runtime scenario's result, with its unit in each
// figure (ms or MiB).
func runtimeRow(res Result) string {
	var n int
	var v [4]string // p50, p90, p99, min
	switch {
	case res.Latency != nil:
		s := res.Latency
		n = len(s.Samples)
		for i, d := range []time.Duration{s.P50, s.P90, s.P99, s.Min} {
			v[i] = fmtMs(d) + " ms"
		}
	case res.Memory != nil:
		s := res.Memory
		n = len(s.Samples)
		for i, b := range []uint64{s.P50, s.P90, s.P99, s.Min} {
			v[i] = fmtMiB(b) + " MiB"
		}
	}
	ratios := " | "
	if vs := res.VsRuntime; vs != nil {
		ratios = fmt.Sprintf("%.2f | %.2f", vs.P50, vs.P99)
	}
	return fmt.Sprintf("| %s | %s | %d | %s | %s | %s | %s | %s |\n", cell(res.Title), cell(res.Runtime.String()), n, v[0], v[1], v[2], v[3], ratios)
}

// runtimeList renders the daemon's runtimes: "gvisor (systrap, default),
// microvm (tcg)", and why one is unavailable.
func runtimeList(infos []api.RuntimeInfo) string {
	parts := make([]string, 0, len(infos))
	for _, in := range infos {
		var how []string
		if in.Mode != "" {
			how = append(how, in.Mode)
		}
		if in.Default {
			how = append(how, "default")
		}
		if !in.Available {
			how = append(how, "unavailable: "+oneLine(in.Unavailable))
		}
		part := in.Name
		if len(how) > 0 {
			part += " (" + strings.Join(how, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// hasDockerRatio reports whether any result compares with Docker.
func (r Report) hasDockerRatio() bool {
	for _, res := range r.Results {
		if res.VsDocker != nil {
			return true
		}
	}
	return false
}

// row renders res as a row of its kind's table, titled title.
func row(title string, res Result, vs *float64) string {
	ratio := ""
	if vs != nil {
		ratio = fmt.Sprintf("%.2f", *vs)
	}
	switch res.kind() {
	case kindLatency:
		s := res.Latency
		return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s | %s |\n", cell(title), len(s.Samples),
			fmtMs(s.P50), fmtMs(s.P90), fmtMs(s.P99), fmtMs(s.Min), fmtMs(s.Mean), ratio)
	case kindThroughput:
		t := res.Throughput
		return fmt.Sprintf("| %s | %d × %d | %.2f s | %d | %.1f | %s | %s | %s |\n", cell(title), t.Sandboxes, t.Callers,
			t.Elapsed.Seconds(), t.Execs, t.PerSec, fmtMs(t.Latency.P50), fmtMs(t.Latency.P99), ratio)
	case kindMemory:
		s := res.Memory
		return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s | %s |\n", cell(title), len(s.Samples),
			fmtMiB(s.P50), fmtMiB(s.P90), fmtMiB(s.P99), fmtMiB(s.Min), fmtMiB(s.Mean), ratio)
	case kindLoad:
		var rows strings.Builder
		for _, l := range res.Loads {
			fmt.Fprintf(&rows, "| %s | %s | %s | %d | %.2f | %d (%.0f %%) | %s | %s | %s | %s |\n", cell(title), cell(l.Load), onOff(l.Pool),
				l.Creates, l.PerSec, l.FromPool, 100*float64(l.FromPool)/float64(max(l.Creates, 1)),
				fmtMs(l.Latency.P50), fmtMs(l.Latency.P90), fmtMs(l.Latency.P99), fmtMs(l.Latency.Max))
		}
		return rows.String()
	}
	return ""
}

// cpuLines renders the CPU accounting of a throughput scenario and of its
// baselines, one line each.
func cpuLines(res Result) []string {
	var lines []string
	for i, r := range append([]Result{res}, res.Baselines...) {
		if r.Throughput == nil || len(r.Throughput.CPU) == 0 {
			continue
		}
		title := r.Title
		if i > 0 {
			title = res.Title + " ↳ " + r.Title
		}
		parts := make([]string, 0, len(r.Throughput.CPU))
		for _, s := range r.Throughput.CPU {
			parts = append(parts, fmt.Sprintf("%s %.2f ms", s.Class, s.MsPerExec))
		}
		lines = append(lines, fmt.Sprintf("- %s: %s\n", oneLine(title), strings.Join(parts, ", ")))
	}
	return lines
}

// capacityLine renders the idle capacity scenario's outcome.
func capacityLine(title string, c *Capacity) string {
	line := fmt.Sprintf("**%s:** %d, creates p50 %s ms, p99 %s ms; stopped by %s; PSS per sandbox p50 %s MiB",
		title, c.Held, fmtMs(c.Creates.P50), fmtMs(c.Creates.P99), oneLine(c.Limit), fmtMiB(c.PSS.P50))
	if c.MemAvailableDrop > 0 {
		line += fmt.Sprintf(", host MemAvailable fell %s MiB per sandbox", fmtMiB(c.MemAvailableDrop))
	}
	return line + "\n"
}

// fmtMs renders d in milliseconds with two decimals.
func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2f", ms(d)) }

// fmtMsF renders fractional milliseconds with two decimals, three below
// one millisecond.
func fmtMsF(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtUs renders d in microseconds with one decimal.
func fmtUs(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

// fmtMiB renders n bytes in MiB with one decimal.
func fmtMiB(n uint64) string { return fmt.Sprintf("%.1f", mib(n)) }

// cell escapes s for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

// oneLine folds s onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orUnknown(s string) string { return cmp.Or(s, "unknown") }
