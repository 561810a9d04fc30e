package bench

// create-mixed (issue 46: 3): a steady rate of creates over several
// shapes and images, on the daemon with the default pool (sized by
// demand), to tell how many the pool serves when creates are not all of
// the default shape.

import (
	"context"
	"fmt"
	"strings"

	"github.com/hutch-dev/hutch/api"
)

// mixedShapes are the shapes create-mixed cycles through: cpus and
// memory_mb around the daemon's default (1 cpu, 512 MiB).
var mixedShapes = []api.CreateRequest{
	{CPUs: 1, MemoryMB: 256},
	{CPUs: 1, MemoryMB: 512},
	{CPUs: 1, MemoryMB: 1024},
	{CPUs: 2, MemoryMB: 512},
	{CPUs: 2, MemoryMB: 1024},
}

// mixedRequest is the i-th create of create-mixed: the images in turn,
// and for each image the shapes in turn, so that every pair comes once
// in len(images) × len(mixedShapes) creates.
func mixedRequest(images []string, i int) api.CreateRequest {
	req := mixedShapes[(i/len(images))%len(mixedShapes)]
	req.Image, req.Name = images[i%len(images)], sandboxName
	return req
}

// createMixed issues creates at Options.MixedRate per second for
// Options.MixedDuration on the daemon with the default pool, over
// mixedShapes × Options.MixedImages, each followed by an exec of true and
// a stop, and counts those the pool served (the pools' hit counters of
// all the images). Off the clock first, one create of each image at each
// shape tells the pool the demand, and the run starts once every image's
// pool is full.
func createMixed(ctx context.Context, e *env) (Result, error) {
	c, n, err := e.ratedCreates(e.opts.MixedRate, e.opts.MixedDuration)
	if err != nil {
		return Result{}, err
	}
	images := e.opts.MixedImages
	warm := len(images) * len(mixedShapes)
	e.progress("bench:   one create of each image and shape (%d), off the clock…", warm)
	var ids []string
	for i := range warm {
		_, id, werr := createThenExec(ctx, c, mixedRequest(images, i))
		if id != "" {
			ids = append(ids, id)
		}
		if err = cmpErr(err, werr); err != nil {
			break
		}
	}
	e.stopAll(ctx, c, ids)
	if err != nil {
		return Result{}, fmt.Errorf("telling the pool the demand: %w", err)
	}
	hits := func() (uint64, error) {
		var sum uint64
		for _, image := range images {
			_, _, h, err := e.poolOf(ctx, c, image)
			if err != nil {
				return 0, err
			}
			sum += h
		}
		return sum, nil
	}
	for _, image := range images {
		// An image the daemon keeps no pool of (a pinned one of another
		// image, warm_pool_auto off) boots every create.
		if target, _, _, err := e.poolOf(ctx, c, image); err != nil {
			return Result{}, err
		} else if target == 0 {
			continue
		}
		if _, _, err := e.poolFullOf(ctx, c, image); err != nil {
			return Result{}, fmt.Errorf("%s: %w", image, err)
		}
	}
	before, err := hits()
	if err != nil {
		return Result{}, err
	}
	lat, took, err := pacedCreates(ctx, c, func(i int) api.CreateRequest { return mixedRequest(images, i) }, n, e.opts.MixedRate)
	if err != nil {
		return Result{}, err
	}
	after, err := hits()
	if err != nil {
		return Result{}, err
	}
	l := pooledLoad(fmt.Sprintf("%g/s for %s over %d shapes × %d images", e.opts.MixedRate, e.opts.MixedDuration, len(mixedShapes), len(images)), n, lat, took, int(after-before))
	shapes := make([]string, len(mixedShapes))
	for i, s := range mixedShapes {
		shapes[i] = fmt.Sprintf("%d cpu %d MiB", s.CPUs, s.MemoryMB)
	}
	pool := "the measured daemon's pool"
	if e.opts.PoolDaemon != nil {
		pool = "a daemon with the default warm pool settings (sized by demand)"
	}
	note := fmt.Sprintf("%d of %d creates served from the warm pool (%.0f %%); images %s, shapes %s in turn; %s, told the demand by one create of each image and shape off the clock, full at the start; each sandbox is stopped once its exec answered",
		l.FromPool, n, 100*float64(l.FromPool)/float64(n), strings.Join(images, ", "), strings.Join(shapes, ", "), pool)
	return Result{Loads: []CreateLoad{l}, Note: note}, nil
}
