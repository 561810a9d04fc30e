package bench

import (
	"encoding/json"
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
	s := Stats{Samples: slices.Clone(samples)}
	if len(samples) == 0 {
		return s
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.Mean = sum / time.Duration(len(sorted))
	s.P50 = Percentile(sorted, 50)
	s.P90 = Percentile(sorted, 90)
	s.P99 = Percentile(sorted, 99)
	return s
}

// Percentile returns the p-th percentile (0 ≤ p ≤ 100, clamped) of sorted
// samples, interpolating linearly between the two closest ranks (numpy's
// default method); no samples give 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
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
	return sorted[lo] + time.Duration(math.Round(frac*float64(sorted[lo+1]-sorted[lo])))
}

// ms converts d to fractional milliseconds, the unit of every report.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON writes the statistics in milliseconds.
func (s Stats) MarshalJSON() ([]byte, error) {
	samples := make([]float64, len(s.Samples))
	for i, d := range s.Samples {
		samples[i] = ms(d)
	}
	return json.Marshal(struct {
		N         int       `json:"n"`
		P50       float64   `json:"p50_ms"`
		P90       float64   `json:"p90_ms"`
		P99       float64   `json:"p99_ms"`
		Min       float64   `json:"min_ms"`
		Mean      float64   `json:"mean_ms"`
		Max       float64   `json:"max_ms"`
		SamplesMs []float64 `json:"samples_ms"`
	}{len(s.Samples), ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Min), ms(s.Mean), ms(s.Max), samples})
}
