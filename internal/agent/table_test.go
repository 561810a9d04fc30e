package agent

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// tableProc is a table entry that never ran; exited says whether it has.
func tableProc(pid int, started time.Time, exited bool) *proc {
	p := &proc{pid: pid, started: started, done: make(chan struct{})}
	if exited {
		close(p.done)
	}
	return p
}

// TestTableBounds fills a table and checks that a start drops the oldest
// exited process to make room, and is refused when all are live.
func TestTableBounds(t *testing.T) {
	tb := newTable(3)
	t0 := time.Unix(1000, 0)
	for i, exited := range []bool{false, true, true} {
		if err := tb.reserve(); err != nil {
			t.Fatal(err)
		}
		tb.add(tableProc(i+1, t0.Add(time.Duration(i)*time.Second), exited))
	}
	if err := tb.reserve(); err != nil {
		t.Fatalf("full table with exited processes: %v", err)
	}
	if _, err := tb.get(2); status.Code(err) != codes.NotFound {
		t.Errorf("oldest exited process still there: %v", err)
	}
	if _, err := tb.get(3); err != nil {
		t.Errorf("newer exited process dropped: %v", err)
	}
	tb.add(tableProc(4, t0.Add(time.Hour), false))
	if err := tb.reserve(); err != nil {
		t.Fatal(err)
	}
	tb.add(tableProc(5, t0.Add(2*time.Hour), false))
	if err := tb.reserve(); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("table full of live processes: %v, want ResourceExhausted", err)
	}
	if got := len(tb.list()); got != 3 {
		t.Errorf("list has %d processes, want 3", got)
	}
}

// TestTableForgetsTiedProcesses checks that a tied process leaves the
// table when it exits, even when it exits before it was added.
func TestTableForgetsTiedProcesses(t *testing.T) {
	tb := newTable(4)
	for _, exitFirst := range []bool{false, true} {
		p := tableProc(7, time.Now(), false)
		p.tied = true
		if err := tb.reserve(); err != nil {
			t.Fatal(err)
		}
		if exitFirst {
			close(p.done)
			tb.exited(p)
			tb.add(p)
		} else {
			tb.add(p)
			close(p.done)
			tb.exited(p)
		}
		if _, err := tb.get(7); status.Code(err) != codes.NotFound {
			t.Errorf("exit first=%v: tied process still in the table", exitFirst)
		}
	}
}
