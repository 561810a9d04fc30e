package sandbox

import (
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// sandbox is the manager's live view of one sandbox.
type sandbox struct {
	rec   record // immutable after creation except through mu-guarded copies
	inst  runtime.Instance
	agent *agentclient.Client
	image *image.Image
	// user is who the image's processes run as; nil is the agent's root.
	user *image.User
	// baseEnv is the image env overlaid with the create-time env.
	baseEnv []string
	// slots holds one token per exec in flight; its capacity is the cap.
	slots chan struct{}
	// destroyed is closed once teardown has finished.
	destroyed chan struct{}

	mu sync.Mutex
	// The fields below are guarded by mu.
	stopped      bool
	stopReason   string
	stoppedAt    time.Time
	lastActivity time.Time
}

func newSandbox(rec *record, inst runtime.Instance, ac *agentclient.Client, img *image.Image, user *image.User, execCap int) *sandbox {
	return &sandbox{
		rec:          *rec,
		inst:         inst,
		agent:        ac,
		image:        img,
		user:         user,
		baseEnv:      baseEnv(user, img, rec.Env),
		slots:        make(chan struct{}, execCap),
		destroyed:    make(chan struct{}),
		lastActivity: time.Now(),
	}
}

// baseEnv is the env every exec of a sandbox starts from: the image's
// user's defaults, the image's env, then the create-time env.
func baseEnv(user *image.User, img *image.Image, env []string) []string {
	return mergeEnv(imageBaseEnv(user), img.Config.Env, env)
}

// tombstone is a stopped sandbox known only from its record.
func tombstone(rec *record) *sandbox {
	sb := &sandbox{
		rec:        *rec,
		destroyed:  make(chan struct{}),
		stopped:    true,
		stopReason: safetext.Line(rec.StopReason, safetext.MaxLine),
		stoppedAt:  rec.StoppedAt,
	}
	close(sb.destroyed)
	return sb
}

// markStopped moves sb to stopped with reason, escaped and clipped since
// it may carry a sandbox's bytes, and returns the reason as kept; ok is
// false when sb was already stopped (the first reason wins).
func (sb *sandbox) markStopped(reason string) (kept string, ok bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.stopped {
		return sb.stopReason, false
	}
	sb.stopped, sb.stopReason, sb.stoppedAt = true, safetext.Line(reason, safetext.MaxLine), time.Now().UTC()
	return sb.stopReason, true
}

func (sb *sandbox) isStopped() bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.stopped
}

// stopState returns whether sb is stopped and why.
func (sb *sandbox) stopState() (bool, string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.stopped, sb.stopReason
}

// touch records activity for the idle reaper.
func (sb *sandbox) touch() {
	sb.mu.Lock()
	sb.lastActivity = time.Now()
	sb.mu.Unlock()
}

// idleSince returns the time of the last activity.
func (sb *sandbox) idleSince() time.Time {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.lastActivity
}

// snapshotRecord returns the record with the current stop state.
func (sb *sandbox) snapshotRecord() record {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	r := sb.rec
	r.Stopped, r.StopReason, r.StoppedAt = sb.stopped, sb.stopReason, sb.stoppedAt
	return r
}

// info renders sb as a list entry.
func (sb *sandbox) info(execCap int) api.SandboxInfo {
	r := sb.snapshotRecord()
	inFlight := len(sb.slots)
	var name *string
	if r.Name != "" {
		name = &r.Name
	}
	free := execCap - inFlight
	if r.Stopped {
		free = 0
	}
	return api.SandboxInfo{
		SandboxID:       r.ID,
		Name:            name,
		Image:           r.Image,
		AgeSecs:         uint64(time.Since(r.CreatedAt).Seconds()),
		ExecInProgress:  inFlight > 0,
		ExecInFlight:    inFlight,
		ExecSlotsFree:   free,
		Stopped:         r.Stopped,
		StopReason:      r.StopReason,
		CPUs:            r.CPUs,
		MemoryMB:        r.MemoryMB,
		Network:         r.Network,
		IdleTimeoutSecs: r.IdleTimeoutSecs,
		CreatedAt:       r.CreatedAt.Format(time.RFC3339),
	}
}
