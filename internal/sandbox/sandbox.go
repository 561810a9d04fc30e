package sandbox

import (
	"cmp"
	"fmt"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// sandbox is the manager's live view of one sandbox.
type sandbox struct {
	rec   record // immutable after creation except through mu-guarded copies
	image *image.Image
	// user is who the image's processes run as; nil is the agent's root.
	user *image.User
	// baseEnv is the image env overlaid with the sandbox's own (the
	// create's, then sandbox::env::*); mu guards it (env.go), envMu
	// serializes its changes (Handle.ChangeEnv).
	baseEnv []string
	envMu   sync.Mutex
	// slots holds one token per exec in flight; its capacity is the cap.
	slots chan struct{}
	// destroyed is closed once teardown has finished.
	destroyed chan struct{}
	// op serializes pause and resume (pause.go).
	op sync.Mutex
	// egressMu serializes changes of its egress policy (applyEgress).
	egressMu sync.Mutex

	// mu guards the fields below (the lock order: Manager.mu in manager.go).
	mu    sync.Mutex
	state State
	// end is why the sandbox ended, set with the move to Stopping.
	end       runtime.End
	stoppedAt time.Time
	// inst and agent are the runtime instance and the connection to its
	// agent; both may be replaced while the sandbox is quiesced (replace).
	inst  runtime.Instance
	agent *agentclient.Client
	// changed is closed and renewed on every transition and replacement,
	// which wakes the watcher.
	changed      chan struct{}
	lastActivity time.Time
	// pausedAt is when it was last paused, while it is paused; lastPause
	// when a pause last began, kept after the resume. depth is the
	// paused one's api.Pause* depth.
	pausedAt, lastPause time.Time
	depth               string
	// expiresAt is the end of its absolute lifetime; zero is none.
	expiresAt time.Time
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
		state:        Booting,
		changed:      make(chan struct{}),
		lastActivity: time.Now(),
	}
}

// baseEnv is the env every exec of a sandbox starts from: the image's
// user's defaults, the image's env, then the create-time env.
func baseEnv(user *image.User, img *image.Image, env []string) []string {
	return spec.MergeEnv(spec.BaseEnv(user), img.Config.Env, env)
}

// tombstone is a stopped sandbox known only from its record. A record
// written before stop causes were kept ended for a cause unknown: exited.
func tombstone(rec *record) *sandbox {
	end := runtime.End{Cause: rec.StopCause, Detail: safetext.Line(rec.StopReason, safetext.MaxLine)}
	if !end.Ended() {
		end.Cause = runtime.CauseExited
	}
	sb := &sandbox{
		rec:       *rec,
		destroyed: make(chan struct{}),
		state:     Stopped,
		end:       end,
		stoppedAt: rec.StoppedAt,
		changed:   make(chan struct{}),
	}
	close(sb.destroyed)
	return sb
}

// transition moves sb to state to, or fails with a *StateError when the
// table does not allow it. Ending goes through finish (Stopping) only.
func (sb *sandbox) transition(to State) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.transitionLocked(to)
}

// transitionLocked is transition; sb.mu must be held.
func (sb *sandbox) transitionLocked(to State) error {
	if !canMove(sb.state, to) {
		return &StateError{From: sb.state, To: to}
	}
	sb.state = to
	close(sb.changed)
	sb.changed = make(chan struct{})
	return nil
}

// finish moves sb to Stopping with end, its detail escaped and clipped
// since it may carry a sandbox's bytes, and returns the end as kept and
// the state it left; ok is false when sb had already ended (the first end
// wins). A death (non-nil d) ends sb only while d's instance and
// connection are still sb's and sb is not quiesced: an instance that was
// replaced, or that went away under a pause or checkpoint, is not sb's end.
func (sb *sandbox) finish(end runtime.End, d *death) (kept runtime.End, was State, ok bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	was = sb.state
	if was.ended() {
		return sb.end, was, false
	}
	if d != nil && (d.inst != sb.inst || d.agent != sb.agent || was.quiesced()) {
		return sb.end, was, false
	}
	if err := sb.transitionLocked(Stopping); err != nil {
		panic(err) // every state but the ended ones may stop
	}
	end.Detail = safetext.Line(end.Detail, safetext.MaxLine)
	sb.end, sb.stoppedAt = end, time.Now().UTC()
	return sb.end, was, true
}

// death is the instance and agent connection a watcher saw end.
type death struct {
	inst  runtime.Instance
	agent *agentclient.Client
}

// current returns sb's state and, once it has ended, why.
func (sb *sandbox) current() (State, runtime.End) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.state, sb.end
}

// isStopped reports whether sb has ended (Stopping or Stopped).
func (sb *sandbox) isStopped() bool {
	st, _ := sb.current()
	return st.ended()
}

// conn returns sb's runtime instance and agent connection.
func (sb *sandbox) conn() (runtime.Instance, *agentclient.Client) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.inst, sb.agent
}

// client returns the connection to sb's agent.
func (sb *sandbox) client() *agentclient.Client {
	_, ac := sb.conn()
	return ac
}

// watched returns what the watcher waits on: the instance, the agent
// connection and the channel closed at the next change.
func (sb *sandbox) watched() (runtime.Instance, *agentclient.Client, <-chan struct{}) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.inst, sb.agent, sb.changed
}

// replace swaps in a new runtime instance and agent connection, as a
// restore does, and returns the old ones for the caller to close. It is
// refused unless sb is quiesced (pausing, paused, resuming or
// checkpointing): a running sandbox's connection carries calls.
func (sb *sandbox) replace(inst runtime.Instance, ac *agentclient.Client) (runtime.Instance, *agentclient.Client, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.state.quiesced() {
		return nil, nil, fmt.Errorf("the instance of a %s sandbox cannot be replaced", sb.state)
	}
	oldInst, oldAgent := sb.inst, sb.agent
	sb.inst, sb.agent = inst, ac
	close(sb.changed)
	sb.changed = make(chan struct{})
	return oldInst, oldAgent, nil
}

// admitted moves a booted or pooled sb to Running, its lifetime starting.
func (sb *sandbox) admitted() error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.transitionLocked(Running); err != nil {
		return err
	}
	sb.startLifetimeLocked()
	return nil
}

// beginPause moves a running sb to Pausing.
func (sb *sandbox) beginPause() error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.transitionLocked(Pausing); err != nil {
		return err
	}
	sb.lastPause = time.Now()
	return nil
}

// beginCheckpoint moves a running or paused sb to Checkpointing.
func (sb *sandbox) beginCheckpoint() error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.transitionLocked(Checkpointing); err != nil {
		return err
	}
	sb.lastPause = time.Now()
	return nil
}

// markPaused moves a pausing or checkpointing sb to Paused at depth.
func (sb *sandbox) markPaused(depth string) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.transitionLocked(Paused); err != nil {
		return err
	}
	sb.pausedAt, sb.depth = time.Now(), depth
	return nil
}

// isHibernated reports whether sb's pause wrote it to disk (memory and
// files, or files only) and its instance is gone.
func (sb *sandbox) isHibernated() bool {
	d := sb.pauseDepth()
	return d == api.PauseHibernate || d == api.PauseFiles
}

// pauseDepth is the depth of sb's pause; "" when it is not paused.
func (sb *sandbox) pauseDepth() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.depth
}

// endPause moves a resuming sb to Running. Its idle time and its
// lifetime, when it has one, start again from now.
func (sb *sandbox) endPause() error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.transitionLocked(Running); err != nil {
		return err
	}
	sb.pausedAt, sb.depth = time.Time{}, ""
	sb.lastActivity = time.Now()
	sb.startLifetimeLocked()
	return nil
}

// startLifetimeLocked starts sb's absolute lifetime (rec.TimeoutSecs)
// from now; sb.mu must be held.
func (sb *sandbox) startLifetimeLocked() {
	if sb.rec.TimeoutSecs > 0 {
		sb.expiresAt = time.Now().Add(time.Duration(sb.rec.TimeoutSecs) * time.Second)
	}
}

// setLifetime gives sb a lifetime of secs from now and returns its end;
// S004 once sb has ended.
func (sb *sandbox) setLifetime(secs uint64) (time.Time, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.state.ended() {
		return time.Time{}, stoppedError(sb.rec.ID, sb.end)
	}
	sb.rec.TimeoutSecs = secs
	sb.startLifetimeLocked()
	return sb.expiresAt, nil
}

// endNow is why sb ended; the zero End while it has not.
func (sb *sandbox) endNow() runtime.End {
	_, end := sb.current()
	return end
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
	r.Stopped, r.StopCause, r.StopReason, r.StoppedAt = sb.state.ended(), sb.end.Cause, sb.end.String(), sb.stoppedAt
	if !r.Stopped {
		r.StopCause, r.StopReason = runtime.CauseNone, ""
	}
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
	st, pausedAt, expiresAt := sb.lifeTimes()
	depth := ""
	if st == Paused {
		depth = sb.pauseDepth()
	}
	return api.SandboxInfo{
		State:           st.String(),
		PausedAt:        rfc3339(pausedAt),
		PauseDepth:      depth,
		TimeoutSecs:     r.TimeoutSecs,
		ExpiresAt:       rfc3339(expiresAt),
		OnIdle:          cmp.Or(r.OnIdle, api.OnIdleStop),
		AutoResume:      r.AutoResume,
		Metadata:        r.Metadata,
		SandboxID:       r.ID,
		Name:            name,
		Image:           r.Image,
		AgeSecs:         uint64(time.Since(r.CreatedAt).Seconds()),
		ExecInProgress:  inFlight > 0,
		ExecInFlight:    inFlight,
		ExecSlotsFree:   free,
		Stopped:         r.Stopped,
		StopReason:      r.StopReason,
		StopCause:       string(r.StopCause),
		CPUs:            r.CPUs,
		MemoryMB:        r.MemoryMB,
		Network:         r.Network,
		Egress:          r.Egress,
		Volumes:         r.Volumes,
		Runtime:         r.Runtime,
		IdleTimeoutSecs: r.IdleTimeoutSecs,
		CreatedAt:       r.CreatedAt.Format(time.RFC3339Nano),
	}
}

// lifeTimes returns sb's state, when it was paused (while it is) and
// when its lifetime ends (while it has not ended).
func (sb *sandbox) lifeTimes() (st State, pausedAt, expiresAt time.Time) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.state.ended() {
		return sb.state, time.Time{}, time.Time{}
	}
	return sb.state, sb.pausedAt, sb.expiresAt
}

// rfc3339 is t in RFC 3339 (UTC), or "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
