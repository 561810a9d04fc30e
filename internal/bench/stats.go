package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Stats summarises latency samples.
type Stats struct {
	// Samples are the measurements in the order they were taken.
	Samples []time.Duration
	Min     time.Duration
	Max     time.Duration
	Mean    time.Duration
	P50     time.Duration
	P90     time.Duration
	P99     time.Duration
}

// Summarize computes the Stats of samples; no samples give zero Stats.
func Summarize(samples []time.Duration) Stats {
	c, v := summarize(samples)
	return Stats{Samples: c, Min: v[0], Max: v[1], Mean: v[2], P50: v[3], P90: v[4], P99: v[5]}
}

// summarize returns a copy of samples and their min, max, mean, p50, p90
// and p99; all zero without samples.
func summarize[T time.Duration | uint64](samples []T) ([]T, [6]T) {
	var v [6]T
	if len(samples) == 0 {
		return slices.Clone(samples), v
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var sum T
	for _, d := range sorted {
		sum += d
	}
	v[0], v[1], v[2] = sorted[0], sorted[len(sorted)-1], sum/T(len(sorted))
	v[3], v[4], v[5] = percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99)
	return slices.Clone(samples), v
}

// Percentile returns the p-th percentile (0 ≤ p ≤ 100, clamped) of sorted
// samples, interpolating linearly between the two closest ranks (numpy's
// default method); no samples give 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	return percentile(sorted, p)
}

// percentile is Percentile for any sorted samples.
func percentile[T time.Duration | uint64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(rank)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := rank - float64(lo)
	return sorted[lo] + T(math.Round(frac*float64(sorted[lo+1]-sorted[lo])))
}

// Sizes summarises byte counts, such as the memory of each sandbox.
type Sizes struct {
	// Samples are the measurements in the order they were taken.
	Samples []uint64
	Min     uint64
	Max     uint64
	Mean    uint64
	P50     uint64
	P90     uint64
	P99     uint64
}

// SummarizeSizes computes the Sizes of samples; no samples give zero Sizes.
func SummarizeSizes(samples []uint64) Sizes {
	c, v := summarize(samples)
	return Sizes{Samples: c, Min: v[0], Max: v[1], Mean: v[2], P50: v[3], P90: v[4], P99: v[5]}
}

// mib converts n bytes to fractional MiB, the unit of memory in reports.
func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// MarshalJSON writes the statistics in MiB.
func (s Sizes) MarshalJSON() ([]byte, error) {
	return summaryJSON("mib", mib, s.Samples, [6]uint64{s.P50, s.P90, s.P99, s.Min, s.Mean, s.Max})
}

// summaryJSON renders a summary in one unit, named by the suffix of its
// fields: {"n", "p50_<unit>", "p90_", "p99_", "min_", "mean_", "max_",
// "samples_"}; conv converts a value to the unit.
func summaryJSON[T time.Duration | uint64](unit string, conv func(T) float64, samples []T, stats [6]T) ([]byte, error) {
	b := fmt.Appendf(nil, `{"n":%d`, len(samples))
	for i, name := range []string{"p50", "p90", "p99", "min", "mean", "max"} {
		v, err := json.Marshal(conv(stats[i]))
		if err != nil {
			return nil, err
		}
		b = fmt.Appendf(b, `,"%s_%s":%s`, name, unit, v)
	}
	converted := make([]float64, len(samples))
	for i, v := range samples {
		converted[i] = conv(v)
	}
	all, err := json.Marshal(converted)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(b, `,"samples_%s":%s}`, unit, all), nil
}

// ms converts d to fractional milliseconds, the unit of every report.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON writes the statistics in milliseconds.
func (s Stats) MarshalJSON() ([]byte, error) {
	return summaryJSON("ms", ms, s.Samples, [6]time.Duration{s.P50, s.P90, s.P99, s.Min, s.Mean, s.Max})
}
