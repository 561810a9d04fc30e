package gvisor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/runtime"
)

func TestAbilities(t *testing.T) {
	got := (&Runtime{}).Abilities()
	want := runtime.Abilities{Pause: true, Checkpoint: true, Resize: true, Stats: true, Layer: true, Mounts: true}
	if got != want {
		t.Errorf("Abilities() = %+v, want %+v", got, want)
	}
}

// TestPauseResume: a paused sandbox does not answer; once resumed it
// answers what it was asked meanwhile.
func TestPauseResume(t *testing.T) {
	r := newTestRuntime(t)
	a := startAgent(t, r, testSpec(t, testRootfs(t, true)))
	p := a.inst.(runtime.Pauser)
	ctx := context.Background()
	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(a.inst.Conn(), "echo while paused"); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		line, _ := a.rd.ReadString('\n')
		answer <- strings.TrimSuffix(line, "\n")
	}()
	select {
	case line := <-answer:
		t.Fatalf("a paused sandbox answered %q", line)
	case <-time.After(500 * time.Millisecond):
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-answer:
		if line != "while paused" {
			t.Errorf("answer after resume = %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30 s of resuming")
	}
	if err := p.Resume(ctx); err == nil {
		t.Error("resuming a running sandbox: want an error")
	}
}
