// Package poolplan sizes the warm pool by demand: pure arithmetic over
// the recent creates, the measured refill time, the images built and a
// clock, which the warm pool (package warmpool) asks for its
// targets. warm_pool pins the size of the images it names; every other
// image's pool follows its recent creates while warm_pool_auto is on:
//
//   - The first preset of image_allowlist keeps one sandbox of its default
//     shape once its image is built, so that a newcomer's first create
//     after the build is served from the pool.
//   - A pool for every shape (issue 46: 3): an image has at most two
//     pools sized by demand, one without a network and one with, each
//     booting its sandboxes at its bound: the largest cpus and the
//     largest memory asked of it (of that network kind) within
//     IdleAfter, the base image's default shape included. Any create
//     within the bound takes one, its limits lowered at the claim, so the
//     creates of all an image's shapes count toward one pool.
//   - A pool grows with its create rate λ (of all its shapes) over the
//     last RateWindow: it holds k sandboxes, the least k for which more
//     than k creates during one refill (a Poisson count of mean λ·T, T
//     the refill time the pool measures) are less likely than MissOdds.
//   - warm_pool_max bounds each image, warm_pool_memory_mb all automatic
//     pools together, a pooled sandbox counted at SandboxCostMB. When
//     they do not fit, each pool first gets its one sandbox (the most
//     recently asked first), then the highest rates get the rest.
//   - A create takes a sandbox of its own shape, or else the smallest of a
//     larger one (its limits lowered), and counts toward its own shape.
//     A create larger than the bound boots, and the bound grows to it.
//   - Once a shape is not asked for within IdleAfter, it leaves its
//     pool's bound and rate, and a pool with no shape left is emptied;
//     the plan is made again every Every, so it shrinks without a
//     create to wake it.
package poolplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
)

const (
	// SandboxCostMB is what one pooled sandbox is counted at against
	// warm_pool_memory_mb: the host memory (PSS of its runsc sandbox,
	// gofer and systrap stubs) of an idle python sandbox that ran one
	// process, as the bench's idle-memory scenario measures it: a median
	// of 20–23 MiB on the development machine, rounded up.
	SandboxCostMB = 24
	// RateWindow is how far back creates count toward a shape's rate.
	RateWindow = 60 * time.Second
	// minSpan is the shortest time a rate is computed over, so that a
	// few creates at once read as a burst, not as an infinite rate.
	minSpan = 5 * time.Second
	// IdleAfter is how long a shape nobody asks for keeps its pool.
	IdleAfter = 5 * time.Minute
	// shapesPerImage is how many of an image's recent shapes are kept
	// for its pools' bounds and rates.
	shapesPerImage = 16
	// MissOdds is the chance of a miss a pool is sized for.
	MissOdds = 0.1
	// defaultRefill is the refill time assumed until one is measured.
	defaultRefill = 500 * time.Millisecond
	// refillWeight is the weight of a new measurement in the moving
	// average of refill times.
	refillWeight = 0.25
	// Every is how often the pool is planned without a wake-up.
	Every = time.Second
	// maxTimes bounds the create times kept per shape.
	maxTimes = 1024
)

// Shape is what pool sandboxes boot with: their limits, and whether
// they have a network (their own namespace, veth and egress chain, with
// no policy until a create claims one).
type Shape struct {
	CPUs, MemoryMB uint32
	Network        bool
}

// Fits reports whether a sandbox of shape s can serve a create asking for
// want: the same network or none, no more cpus nor memory than s (the
// claim lowers its limits).
func (s Shape) Fits(want Shape) bool {
	return want.Network == s.Network && want.CPUs <= s.CPUs && want.MemoryMB <= s.MemoryMB
}

// Bound is the least shape that fits both s and o, which have the same
// network: the larger cpus and the larger memory.
func (s Shape) Bound(o Shape) Shape {
	return Shape{CPUs: max(s.CPUs, o.CPUs), MemoryMB: max(s.MemoryMB, o.MemoryMB), Network: s.Network}
}

// Key names one pool: an image and a shape.
type Key struct {
	Image string
	Shape Shape
}

func (k Key) String() string {
	s := fmt.Sprintf("%s/%dcpu/%dMB", k.Image, k.Shape.CPUs, k.Shape.MemoryMB)
	if k.Shape.Network {
		s += "/network"
	}
	return s
}

// CompareKeys orders keys by image, then shape, for stable plans.
func CompareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Image, b.Image), compareBool(a.Shape.Network, b.Shape.Network),
		cmp.Compare(a.Shape.CPUs, b.Shape.CPUs), cmp.Compare(a.Shape.MemoryMB, b.Shape.MemoryMB))
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

// Plan is the pool's sizing: the sizes warm_pool pins, the demand of the
// other images and the refill times measured. It is not safe for
// concurrent use: its owner's lock guards it. Its zero value keeps no
// sandbox.
type Plan struct {
	// Fixed at New: the sizes warm_pool pins (0 included), whether the
	// other images are sized by demand, warm_pool_max, the budget in
	// sandboxes, and the image kept at one sandbox once built.
	pinned    map[string]int
	auto      bool
	max       int
	budget    int
	baseImage string
	cfg       config.Config
	// demand is each automatic image's recent creates by shape, most
	// recently asked first; refill the moving average of refill times.
	demand map[string][]*shapeDemand
	refill time.Duration
}

// New is the plan of cfg (warm_pool, warm_pool_auto and their bounds), or
// nil when it never keeps a sandbox.
func New(cfg config.Config) *Plan {
	p := &Plan{
		pinned: map[string]int{},
		auto:   cfg.WarmPoolAuto,
		max:    cfg.WarmPoolMax,
		budget: cfg.WarmPoolMemoryMB / SandboxCostMB,
		cfg:    cfg,
		demand: map[string][]*shapeDemand{},
	}
	pinned := 0
	for image, n := range cfg.WarmPool {
		p.pinned[image] = max(n, 0)
		pinned += max(n, 0)
	}
	if p.auto {
		for _, image := range cfg.ImageAllowlist {
			if slices.Contains(config.Presets, image) {
				if !p.isPinned(image) {
					p.baseImage = image
				}
				break
			}
		}
	}
	if pinned == 0 && (!p.auto || p.budget == 0) {
		return nil
	}
	return p
}

// Renew is the plan of cfg after a config reload (issue 41: 4): New's,
// taking over old's refill times and the demand of the images cfg still
// sizes by demand. It is never nil: a cfg that keeps no sandbox gets a
// plan that keeps none, and the pool drains to it.
func Renew(old *Plan, cfg config.Config) *Plan {
	p := New(cfg)
	if p == nil {
		return &Plan{}
	}
	if old == nil {
		return p
	}
	p.refill = old.refill
	if p.auto {
		for image, shapes := range old.demand {
			if !p.isPinned(image) {
				p.demand[image] = shapes
			}
		}
	}
	return p
}

// ShapeOf is an image's default shape: default_cpus and
// default_memory_mb, capped by per_image_caps.
func (p *Plan) ShapeOf(image string) Shape {
	shape := Shape{CPUs: p.cfg.DefaultCPUs, MemoryMB: p.cfg.DefaultMemoryMB}
	if caps, ok := p.cfg.PerImageCaps[image]; ok {
		if caps.MaxCPUs > 0 {
			shape.CPUs = min(shape.CPUs, caps.MaxCPUs)
		}
		if caps.MaxMemoryMB > 0 {
			shape.MemoryMB = min(shape.MemoryMB, caps.MaxMemoryMB)
		}
	}
	return shape
}

// isPinned reports whether warm_pool names image.
func (p *Plan) isPinned(image string) bool {
	_, ok := p.pinned[image]
	return ok
}

// Covers reports whether creates of image may take from the pool.
func (p *Plan) Covers(image string) bool {
	if p.isPinned(image) {
		return p.pinned[image] > 0
	}
	return p.auto
}

// Images are the images whose cache state the next plan needs (Targets'
// built): the base image and those with demand.
func (p *Plan) Images() []string {
	if !p.auto {
		return nil
	}
	var images []string
	if p.baseImage != "" {
		images = append(images, p.baseImage)
	}
	for image := range p.demand {
		images = append(images, image)
	}
	return images
}

// shapeDemand is the recent creates of one shape of an image.
type shapeDemand struct {
	shape Shape
	// times are the creates within RateWindow, oldest first.
	times []time.Time
	last  time.Time
}

// rate is the creates per second over the window, at now.
func (d *shapeDemand) rate(now time.Time) float64 {
	if len(d.times) == 0 {
		return 0
	}
	span := max(now.Sub(d.times[0]), minSpan)
	return float64(len(d.times)) / span.Seconds()
}

// Note records a create of image with shape want at now. Pinned images
// are not planned from demand.
func (p *Plan) Note(image string, want Shape, now time.Time) {
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
	if len(d.times) > maxTimes {
		d.times = slices.Delete(d.times, 0, len(d.times)-maxTimes)
	}
	d.last = now
	// Most recent first; the shapes asked for longest ago drop out.
	shapes = slices.Insert(shapes, 0, d)
	if len(shapes) > shapesPerImage {
		shapes = shapes[:shapesPerImage]
	}
	p.demand[image] = shapes
}

// ObserveRefill takes the time one refill took, from its start until its
// sandbox was ready, into the moving average.
func (p *Plan) ObserveRefill(d time.Duration) {
	if p.refill == 0 {
		p.refill = d
		return
	}
	p.refill = time.Duration(float64(p.refill)*(1-refillWeight) + float64(d)*refillWeight)
}

// ForgetRefills drops the refill times measured: the plan assumes the
// default until the next one.
func (p *Plan) ForgetRefills() { p.refill = 0 }

// RefillTime is the refill time the plan assumes.
func (p *Plan) RefillTime() time.Duration {
	if p.refill == 0 {
		return defaultRefill
	}
	return p.refill
}

// PoissonCover is the least k ≥ 1 such that a Poisson count of mean mu
// reaches k with a probability of at most odds: how many ready sandboxes
// serve the creates that arrive during one refill, but for odds.
func PoissonCover(mu, odds float64) int {
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

// want is what one automatic pool asks of the plan.
type want struct {
	key  Key
	want int
	// last orders the first sandbox of each pool, rate the rest.
	last time.Time
	rate float64
}

// Targets computes every pool's target at now, built naming the images
// whose cache state is ready (of Images), and drops demand that has aged
// out.
func (p *Plan) Targets(now time.Time, built map[string]bool) map[Key]int {
	targets := map[Key]int{}
	for image, n := range p.pinned {
		if n > 0 {
			targets[Key{image, p.ShapeOf(image)}] = n
		}
	}
	if !p.auto {
		return targets
	}
	var wants []want
	refill := p.RefillTime().Seconds()
	for image, shapes := range p.demand {
		shapes = slices.DeleteFunc(shapes, func(d *shapeDemand) bool {
			i := 0
			for i < len(d.times) && now.Sub(d.times[i]) > RateWindow {
				i++
			}
			d.times = slices.Delete(d.times, 0, i)
			return now.Sub(d.last) > IdleAfter
		})
		if len(shapes) == 0 {
			delete(p.demand, image)
			continue
		}
		p.demand[image] = shapes
		if !built[image] {
			continue
		}
		wants = append(wants, bounds(image, shapes, now)...)
	}
	if p.baseImage != "" && built[p.baseImage] {
		base := Key{p.baseImage, p.ShapeOf(p.baseImage)}
		if i := slices.IndexFunc(wants, func(w want) bool { return w.key.Image == base.Image && !w.key.Shape.Network }); i >= 0 {
			wants[i].key.Shape, wants[i].last = base.Shape.Bound(wants[i].key.Shape), now
		} else {
			wants = append(wants, want{key: base, rate: 0, last: now})
		}
	}
	for i := range wants {
		wants[i].want = PoissonCover(wants[i].rate*refill, MissOdds)
	}
	for k, n := range p.allocate(wants) {
		targets[k] = n
	}
	return targets
}

// bounds merges the recent shapes of image into its pools, one per
// network kind (without a network first): each at the bound of its
// shapes, at the sum of their rates, last asked when the latest was.
func bounds(image string, shapes []*shapeDemand, now time.Time) []want {
	var kinds [2]*want
	for _, d := range shapes {
		i := 0
		if d.shape.Network {
			i = 1
		}
		if kinds[i] == nil {
			kinds[i] = &want{key: Key{image, d.shape}, last: d.last}
		}
		w := kinds[i]
		w.key.Shape = w.key.Shape.Bound(d.shape)
		w.rate += d.rate(now)
		if d.last.After(w.last) {
			w.last = d.last
		}
	}
	var out []want
	for _, w := range kinds {
		if w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// allocate fits the wants into warm_pool_max per image and the memory
// budget: first one sandbox per pool, the most recently asked for first;
// then, round after round, one more to each pool still short, the highest
// rates first.
func (p *Plan) allocate(wants []want) map[Key]int {
	out := map[Key]int{}
	perImage := map[string]int{}
	total := 0
	grant := func(w want) bool {
		if total >= p.budget || perImage[w.key.Image] >= p.max || out[w.key] >= w.want {
			return false
		}
		out[w.key]++
		perImage[w.key.Image]++
		total++
		return true
	}
	slices.SortFunc(wants, func(a, b want) int {
		return cmp.Or(b.last.Compare(a.last), CompareKeys(a.key, b.key))
	})
	for _, w := range wants {
		grant(w)
	}
	slices.SortStableFunc(wants, func(a, b want) int { return cmp.Compare(b.rate, a.rate) })
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
