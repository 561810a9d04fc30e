package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// NameVolumeWrite is the volume throughput scenario.
const NameVolumeWrite = "volume-write"

// volumeWriteBytes is what each run writes; volumeWriteRuns caps the
// timed runs (each writes it twice, fsynced).
const (
	volumeWriteBytes = 256 << 20
	volumeWriteRuns  = 5
)

// ddScript writes volumeWriteBytes of zeros to a file in directory $1 with
// dd (conv=fsync: the time includes getting them to the disk), removes
// it, and prints the seconds the write took.
var ddScript = fmt.Sprintf(`f="$1/hutch-bench-dd"
s=$(date +%%s.%%N)
dd if=/dev/zero of="$f" bs=1M count=%d conv=fsync 2>/dev/null || exit 1
e=$(date +%%s.%%N)
rm -f "$f"
echo "$s $e" | awk '{printf "%%.9f\n", $2 - $1}'`, volumeWriteBytes>>20)

// volumeWrite times dd writes into a volume mounted in a sandbox and, in
// the same sandbox and alternately, into its writable root (/tmp).
func volumeWrite(ctx context.Context, e *env) (Result, error) {
	name := "hutch-bench-" + uuid.NewString()[:8]
	if _, err := e.c.CreateVolume(ctx, name, 2*volumeWriteBytes>>20); err != nil {
		if errdefs.Is(err, errdefs.CodeNoVolumes) {
			return Result{}, skipf("no volumes on this daemon: %v", err)
		}
		return Result{}, err
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		if _, err := e.c.DeleteVolume(ctx, name); err != nil {
			e.stops.fail(fmt.Errorf("deleting volume %s: %w", name, err))
		}
	}()
	id, err := e.createWith(ctx, api.CreateRequest{Image: e.opts.Image, Name: sandboxName, Volumes: []api.VolumeMount{{Name: name, Path: "/vol"}}})
	if err != nil {
		return Result{}, err
	}
	// The volume is deleted once the sandbox's teardown is over.
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		_, _ = e.c.Stop(sctx, id, true)
	}()
	write := func(dir string) (time.Duration, error) {
		res, err := e.exec(ctx, id, "sh", "-c", ddScript, "sh", dir)
		if err != nil {
			return 0, err
		}
		d, err := parseSeconds(res.Stdout, 1)
		if err != nil {
			return 0, err
		}
		return d[0], nil
	}
	var onVolume, onRoot []time.Duration
	warmup, runs := min(e.opts.Warmup, 1), min(e.opts.Runs, volumeWriteRuns)
	for i := range warmup + runs {
		v, err := write("/vol")
		if err != nil {
			return Result{}, err
		}
		r, err := write("/tmp")
		if err != nil {
			return Result{}, err
		}
		if i >= warmup {
			onVolume, onRoot = append(onVolume, v), append(onRoot, r)
		}
	}
	res, root := latencyResult(onVolume), latencyResult(onRoot)
	root.Name, root.Title = "writable-root", "the same write to the sandbox's writable root (/tmp)"
	res.Baselines = []Result{root}
	mibs := func(d time.Duration) float64 { return float64(volumeWriteBytes) / (1 << 20) / d.Seconds() }
	res.Note = fmt.Sprintf("%s with dd conv=fsync, at p50: %.0f MiB/s on a volume, %.0f MiB/s on the writable root (volume/root %.2f)",
		sizeText(volumeWriteBytes), mibs(res.Latency.P50), mibs(root.Latency.P50), mibs(res.Latency.P50)/mibs(root.Latency.P50))
	return res, nil
}
