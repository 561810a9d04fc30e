package bench

import (
	"slices"
	"time"
)

// Figures of the host reference that results are compared with.
const (
	refSpawn   = "host spawn"
	refPipeOne = "pipe round trip on one CPU"
	refPipeTwo = "pipe round trip across two CPUs"
)

// HostRatio compares one figure of the run with the host reference: how
// many of the host's own process starts, or pipe round trips, it costs.
// Ratios like these change less from one host to another than the times.
type HostRatio struct {
	// Name is the scenario's; Title also names the baseline, if it is one.
	Name  string `json:"name"`
	Title string `json:"title"`
	// Of is the reference's figure: refSpawn, refPipeOne or refPipeTwo.
	Of    string  `json:"of"`
	P50Ms float64 `json:"p50_ms"`
	// RefP50Ms is the figure's p50 over the start and end samples.
	RefP50Ms float64 `json:"ref_p50_ms"`
	Ratio    float64 `json:"ratio"`
}

// vsHostSpawn lists the scenarios whose p50 is compared with the host's
// spawn: an exec starts one process, as the reference does.
var vsHostSpawn = []string{NameExecTrue, NameExecTrueWS, NameSpawnFloor}

// compareWithHost returns the ratios of the run's exec figures to the host
// reference: the p50 of each scenario of vsHostSpawn and of its Docker
// baseline over the host's spawn, and what hutch adds per exec (vs floor)
// over the host's pipe round trip, the cost it is made of. None without a
// reference.
func (r Report) compareWithHost() []HostRatio {
	if r.Reference == nil {
		return nil
	}
	spawn := r.Reference.pooled(func(h HostRef) Stats { return h.Spawn }).P50
	pipeOne := r.Reference.pooled(func(h HostRef) Stats { return h.PipeOneCPU }).P50
	pipeTwo := r.Reference.pooled(func(h HostRef) Stats { return h.PipeTwoCPUs }).P50
	var out []HostRatio
	add := func(name, title, of string, v, ref time.Duration) {
		if ref > 0 && v > 0 {
			out = append(out, HostRatio{Name: name, Title: title, Of: of, P50Ms: ms(v), RefP50Ms: ms(ref), Ratio: float64(v) / float64(ref)})
		}
	}
	for _, res := range r.Results {
		if res.kind() != kindLatency || !slices.Contains(vsHostSpawn, res.Name) {
			continue
		}
		add(res.Name, res.Title, refSpawn, res.Latency.P50, spawn)
		for _, b := range res.Baselines {
			if b.Name == baselineDocker && b.kind() == kindLatency {
				add(res.Name, res.Title+" ↳ "+b.Title, refSpawn, b.Latency.P50, spawn)
			}
		}
	}
	if o, ok := r.Overhead(); ok {
		add(NameSpawnFloor, "added by hutch per exec (vs floor)", refPipeOne, o.Added, pipeOne)
		add(NameSpawnFloor, "added by hutch per exec (vs floor)", refPipeTwo, o.Added, pipeTwo)
	}
	return out
}
