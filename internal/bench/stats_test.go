package bench

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// msList turns whole milliseconds into durations.
func msList(vals ...float64) []time.Duration {
	out := make([]time.Duration, len(vals))
	for i, v := range vals {
		out[i] = time.Duration(v * float64(time.Millisecond))
	}
	return out
}

func TestPercentile(t *testing.T) {
	oneToTen := msList(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "no samples", sorted: nil, p: 50, want: 0},
		{name: "one sample", sorted: msList(7), p: 99, want: 7 * time.Millisecond},
		{name: "median of two interpolates", sorted: msList(10, 20), p: 50, want: 15 * time.Millisecond},
		{name: "p0 is the minimum", sorted: oneToTen, p: 0, want: 1 * time.Millisecond},
		{name: "p100 is the maximum", sorted: oneToTen, p: 100, want: 10 * time.Millisecond},
		{name: "p50 of an even count", sorted: oneToTen, p: 50, want: 5500 * time.Microsecond},
		{name: "p90", sorted: oneToTen, p: 90, want: 9100 * time.Microsecond},
		{name: "p99", sorted: oneToTen, p: 99, want: 9910 * time.Microsecond},
		{name: "p50 of an odd count is the middle", sorted: msList(1, 2, 100), p: 50, want: 2 * time.Millisecond},
		{name: "below 0 clamps", sorted: oneToTen, p: -5, want: 1 * time.Millisecond},
		{name: "above 100 clamps", sorted: oneToTen, p: 250, want: 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    Stats
	}{
		{name: "empty", samples: nil, want: Stats{}},
		{
			name:    "one sample",
			samples: msList(3),
			want: Stats{
				Samples: msList(3),
				Min:     3 * time.Millisecond, Max: 3 * time.Millisecond, Mean: 3 * time.Millisecond,
				P50: 3 * time.Millisecond, P90: 3 * time.Millisecond, P99: 3 * time.Millisecond,
			},
		},
		{
			name:    "unsorted input",
			samples: msList(30, 10, 20, 40),
			want: Stats{
				Samples: msList(30, 10, 20, 40),
				Min:     10 * time.Millisecond, Max: 40 * time.Millisecond, Mean: 25 * time.Millisecond,
				P50: 25 * time.Millisecond, P90: 37 * time.Millisecond, P99: 39700 * time.Microsecond,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.samples)
			got := Summarize(in)
			if !slices.Equal(in, tt.samples) {
				t.Errorf("Summarize changed its input to %v", in)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Summarize = %+v\nwant        %+v", got, tt.want)
			}
		})
	}
}

func TestStatsJSONIsMilliseconds(t *testing.T) {
	b, err := json.Marshal(Summarize(msList(1.5, 2.5)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":2,"p50_ms":2,"p90_ms":2.4,"p99_ms":2.49,"min_ms":1.5,"mean_ms":2,"max_ms":2.5,"samples_ms":[1.5,2.5]}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}
