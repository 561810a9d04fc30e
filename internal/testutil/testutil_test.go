package testutil

import (
	"os/exec"
	goruntime "runtime"
	"testing"
)

// TestRequiresBinary: a missing binary skips, or fails under
// HUTCH_REQUIRE_INTEGRATION=1; a present one is returned.
func TestRequiresBinary(t *testing.T) {
	if p := RequiresBinary(t, "go"); p == "" {
		t.Error("RequiresBinary(go) returned no path")
	}
	for _, required := range []string{"", "1"} {
		t.Setenv("HUTCH_REQUIRE_INTEGRATION", required)
		var skipped, failed bool
		done := make(chan struct{})
		ft := &fakeTB{TB: t, skip: func() { skipped = true }, fail: func() { failed = true }}
		go func() {
			defer close(done)
			RequiresBinary(ft, "hutch-test-no-such-binary")
		}()
		<-done
		if skipped == (required == "1") || failed != (required == "1") {
			t.Errorf("HUTCH_REQUIRE_INTEGRATION=%q: skipped %v, failed %v", required, skipped, failed)
		}
	}
	if _, err := exec.LookPath("hutch-test-no-such-binary"); err == nil {
		t.Fatal("the missing binary exists")
	}
}

// fakeTB records a skip or a fatal failure and ends its goroutine, as
// testing.T does.
type fakeTB struct {
	testing.TB
	skip, fail func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(...any) {
	f.skip()
	goruntime.Goexit()
}
func (f *fakeTB) Fatalf(string, ...any) {
	f.fail()
	goruntime.Goexit()
}
