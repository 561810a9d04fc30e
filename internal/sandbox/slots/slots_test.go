package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestPriorityOrder: with every slot held, a freed slot goes to the first
// waiter of the best priority, whatever their arrival order; a release
// counts once.
func TestPriorityOrder(t *testing.T) {
	s := New(1, 2)
	ctx := context.Background()
	held, err := s.Acquire(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 2)
	wait := func(prio int) {
		release, err := s.Acquire(ctx, prio, nil)
		if err != nil {
			t.Error(err)
			return
		}
		got <- prio
		release()
	}
	go wait(1)
	testutil.Eventually(t, 30*time.Second, func() bool { return s.Waiting(1) == 1 }, "the low priority waits")
	go wait(0)
	testutil.Eventually(t, 30*time.Second, func() bool { return s.Waiting(0) == 1 }, "the high priority waits")
	held()
	held() // a second release of the same slot does nothing
	if first, second := <-got, <-got; first != 0 || second != 1 {
		t.Errorf("served %d then %d, want 0 then 1", first, second)
	}
	if s.used != 0 {
		t.Errorf("%d slots held after every release, want 0", s.used)
	}
}

// TestAcquireEnds: a waiter whose context ends gets its error, one whose
// stop closes S301, and neither keeps a place in line.
func TestAcquireEnds(t *testing.T) {
	s := New(1, 1)
	held, err := s.Acquire(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Acquire(ctx, 0, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, err := s.Acquire(context.Background(), 0, stop); !errdefs.Is(err, errdefs.CodeShuttingDown) {
		t.Errorf("stopped: %v, want S301", err)
	}
	if n := s.Waiting(0); n != 0 {
		t.Errorf("%d left in line", n)
	}
}
