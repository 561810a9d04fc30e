package sandbox

// Sizing the warm pool by demand. warm_pool pins the size of the images
// it names; every other image's pool follows its recent creates while
// warm_pool_auto is on:
//
//   - The first preset of image_allowlist keeps one sandbox of its default
//     shape once its image is built, so that a newcomer's first create
//     after the build is served from the pool.
//   - Every shape (cpus, memory, network) a create asked for within warmIdleAfter
//     keeps at least one sandbox, for the warmShapesPerImage shapes of an
//     image asked for last.
//   - A shape's pool grows with its create rate λ over the last
//     warmRateWindow: it holds k sandboxes, the least k for which more than
//     k creates during one refill (a Poisson count of mean λ·T, T the
//     refill time the pool measures) are less likely than warmMissOdds.
//   - warm_pool_max bounds each image, warm_pool_memory_mb all automatic
//     pools together, a pooled sandbox counted at WarmSandboxCostMB. When
//     they do not fit, each shape first gets its one sandbox (the most
//     recently asked first), then the highest rates get the rest.
//   - A create takes a sandbox of its own shape, or else the smallest of a
//     larger one (its limits lowered), and counts toward its own shape.
//   - Once a shape is not asked for within warmIdleAfter, its pool is
//     emptied; the plan is made again every warmPlanEvery, so it shrinks
//     without a create to wake it.
//
// The plan is a pure function of the demand, the measured refill time, the
// images built and the clock (warmPool.now), which tests set.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

const (
	// WarmSandboxCostMB is what one pooled sandbox is counted at against
	// warm_pool_memory_mb: the host memory (PSS of its runsc sandbox,
	// gofer and systrap stubs) of an idle python sandbox that ran one
	// process, as the bench's idle-memory scenario measures it: a median
	// of 20–23 MiB on the development machine, rounded up.
	WarmSandboxCostMB = 24
	// warmRateWindow is how far back creates count toward a shape's rate.
	warmRateWindow = 60 * time.Second
	// warmMinSpan is the shortest time a rate is computed over, so that a
	// few creates at once read as a burst, not as an infinite rate.
	warmMinSpan = 5 * time.Second
	// warmIdleAfter is how long a shape nobody asks for keeps its pool.
	warmIdleAfter = 5 * time.Minute
	// warmShapesPerImage is how many of an image's shapes have pools.
	warmShapesPerImage = 3
	// warmMissOdds is the chance of a miss a pool is sized for.
	warmMissOdds = 0.1
	// warmDefaultRefill is the refill time assumed until one is measured.
	warmDefaultRefill = 500 * time.Millisecond
	// warmRefillWeight is the weight of a new measurement in the moving
	// average of refill times.
	warmRefillWeight = 0.25
	// warmPlanEvery is how often the pool is planned without a wake-up.
	warmPlanEvery = time.Second
	// warmMaxTimes bounds the create times kept per shape.
	warmMaxTimes = 1024
)

// warmShape is what pool sandboxes boot with: their limits, and whether
// they have a network (their own namespace, veth and egress chain, with
// no policy until a create claims one: pool_network.go).
type warmShape struct {
	cpus, memoryMB uint32
	network        bool
}

// fits reports whether a sandbox of shape s can serve a create asking for
// want: the same network or none, no more cpus nor memory than s
// (claimWarm lowers its limits).
func (s warmShape) fits(want warmShape) bool {
	return want.network == s.network && want.cpus <= s.cpus && want.memoryMB <= s.memoryMB
}

// warmKey names one pool: an image and a shape.
type warmKey struct {
	image string
	shape warmShape
}

func (k warmKey) String() string {
	s := fmt.Sprintf("%s/%dcpu/%dMB", k.image, k.shape.cpus, k.shape.memoryMB)
	if k.shape.network {
		s += "/network"
	}
	return s
}

// compareKeys orders keys by image, then shape, for stable plans.
func compareKeys(a, b warmKey) int {
	return cmp.Or(cmp.Compare(a.image, b.image), compareBool(a.shape.network, b.shape.network),
		cmp.Compare(a.shape.cpus, b.shape.cpus), cmp.Compare(a.shape.memoryMB, b.shape.memoryMB))
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// shapeDemand is the recent creates of one shape of an image.
type shapeDemand struct {
	shape warmShape
	// times are the creates within warmRateWindow, oldest first.
	times []time.Time
	last  time.Time
}

// rate is the creates per second over the window, at now.
func (d *shapeDemand) rate(now time.Time) float64 {
	if len(d.times) == 0 {
		return 0
	}
	span := max(now.Sub(d.times[0]), warmMinSpan)
	return float64(len(d.times)) / span.Seconds()
}

// noteLocked records a create of image with shape want at now; m.mu must be
// held. Pinned images are not planned from demand.
func (p *warmPool) noteLocked(image string, want warmShape, now time.Time) {
	if !p.auto || p.isPinned(image) {
		return
	}
	shapes := p.demand[image]
	i := slices.IndexFunc(shapes, func(d *shapeDemand) bool { return d.shape == want })
	var d *shapeDemand
	if i >= 0 {
		d = shapes[i]
		shapes = slices.Delete(shapes, i, i+1)
	} else {
		d = &shapeDemand{shape: want}
	}
	d.times = append(d.times, now)
	if len(d.times) > warmMaxTimes {
		d.times = slices.Delete(d.times, 0, len(d.times)-warmMaxTimes)
	}
	d.last = now
	// Most recent first; the shapes asked for longest ago drop out.
	shapes = slices.Insert(shapes, 0, d)
	if len(shapes) > warmShapesPerImage {
		shapes = shapes[:warmShapesPerImage]
	}
	p.demand[image] = shapes
}

// observeRefillLocked takes the time one refill took, from its start until
// its sandbox was ready, into the moving average; m.mu must be held.
func (p *warmPool) observeRefillLocked(d time.Duration) {
	if p.refill == 0 {
		p.refill = d
		return
	}
	p.refill = time.Duration(float64(p.refill)*(1-warmRefillWeight) + float64(d)*warmRefillWeight)
}

// refillTime is the refill time the plan assumes; m.mu must be held.
func (p *warmPool) refillTime() time.Duration {
	if p.refill == 0 {
		return warmDefaultRefill
	}
	return p.refill
}

// poissonCover is the least k ≥ 1 such that a Poisson count of mean mu
// reaches k with a probability of at most odds: how many ready sandboxes
// serve the creates that arrive during one refill, but for odds.
func poissonCover(mu, odds float64) int {
	if mu <= 0 {
		return 1
	}
	term := math.Exp(-mu) // P(N = 0)
	below := term         // P(N < k) for k = 1
	k := 1
	for 1-below > odds && k < 10_000 {
		term *= mu / float64(k)
		below += term
		k++
	}
	return k
}

// warmWant is what one automatic pool asks of the plan.
type warmWant struct {
	key  warmKey
	want int
	// last orders the first sandbox of each pool, rate the rest.
	last time.Time
	rate float64
}

// planLocked computes every pool's target at now, dropping demand that has
// aged out; m.mu must be held.
func (p *warmPool) planLocked(now time.Time) map[warmKey]int {
	targets := map[warmKey]int{}
	for image, n := range p.pinned {
		if n > 0 {
			targets[warmKey{image, p.shapeOf(image)}] = n
		}
	}
	if !p.auto {
		return targets
	}
	var wants []warmWant
	refill := p.refillTime().Seconds()
	for image, shapes := range p.demand {
		shapes = slices.DeleteFunc(shapes, func(d *shapeDemand) bool {
			i := 0
			for i < len(d.times) && now.Sub(d.times[i]) > warmRateWindow {
				i++
			}
			d.times = slices.Delete(d.times, 0, i)
			return now.Sub(d.last) > warmIdleAfter
		})
		if len(shapes) == 0 {
			delete(p.demand, image)
			continue
		}
		p.demand[image] = shapes
		if !p.built[image] {
			continue
		}
		for _, d := range shapes {
			r := d.rate(now)
			wants = append(wants, warmWant{key: warmKey{image, d.shape}, want: poissonCover(r*refill, warmMissOdds), last: d.last, rate: r})
		}
	}
	if p.baseImage != "" && p.built[p.baseImage] {
		base := warmKey{p.baseImage, p.shapeOf(p.baseImage)}
		if i := slices.IndexFunc(wants, func(w warmWant) bool { return w.key == base }); i >= 0 {
			wants[i].last = now
		} else {
			wants = append(wants, warmWant{key: base, want: 1, last: now})
		}
	}
	for k, n := range p.allocate(wants) {
		targets[k] = n
	}
	return targets
}

// allocate fits the wants into warm_pool_max per image and the memory
// budget: first one sandbox per pool, the most recently asked for first;
// then, round after round, one more to each pool still short, the highest
// rates first.
func (p *warmPool) allocate(wants []warmWant) map[warmKey]int {
	out := map[warmKey]int{}
	perImage := map[string]int{}
	total := 0
	grant := func(w warmWant) bool {
		if total >= p.budget || perImage[w.key.image] >= p.max || out[w.key] >= w.want {
			return false
		}
		out[w.key]++
		perImage[w.key.image]++
		total++
		return true
	}
	slices.SortFunc(wants, func(a, b warmWant) int {
		return cmp.Or(b.last.Compare(a.last), compareKeys(a.key, b.key))
	})
	for _, w := range wants {
		grant(w)
	}
	slices.SortStableFunc(wants, func(a, b warmWant) int { return cmp.Compare(b.rate, a.rate) })
	for more := true; more; {
		more = false
		for _, w := range wants {
			if grant(w) {
				more = true
			}
		}
	}
	return out
}
