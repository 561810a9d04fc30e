package metricsvc

import (
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestSampler: a live sandbox nobody reads gets samples, as its owner's
// (another's is not sampled for it), and a stopped one's are dropped.
func TestSampler(t *testing.T) {
	sbs := &sandboxtest.Sandboxes{}
	a, b := sbs.Add("alice"), sbs.Add("bob")
	for _, sb := range []*sandboxtest.Sandbox{a, b} {
		sb.Vitals = sandbox.Vitals{CPUs: 1, MemoryMB: 256, CreatedAt: time.Now()}
	}
	s := New(sbs, Limits{})
	done := make(chan struct{})
	finished := make(chan struct{})
	live := func() map[string]string { return map[string]string{a.ID: "alice", b.ID: "alice"} }
	go func() { s.Sample(done, time.Millisecond, live); close(finished) }()

	testutil.Eventually(t, 10*time.Second, func() bool { return len(s.history.between(a.ID, time.Time{}, time.Time{})) == 1 },
		"no sample of a sandbox nobody read")
	if got := s.history.between(b.ID, time.Time{}, time.Time{}); len(got) != 0 {
		t.Errorf("bob's sandbox sampled as alice's: %+v", got)
	}
	sbs.SetState(a, sandbox.Stopped)
	testutil.Eventually(t, 10*time.Second, func() bool { return len(s.history.between(a.ID, time.Time{}, time.Time{})) == 0 },
		"a stopped sandbox's samples are kept")
	close(done)
	<-finished
	if sbs.Held() != 0 {
		t.Errorf("%d handles held after the sampler ended", sbs.Held())
	}
}
