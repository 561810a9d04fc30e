package cleanup

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunUndoesInReverseOnceOnAContextThatOutlivesCancel(t *testing.T) {
	var s Stack
	var order []string
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"a", "b", "c"} {
		s.Push(name, func(ctx context.Context) error {
			if ctx.Err() != nil {
				t.Errorf("step %s ran on a cancelled context", name)
			}
			order = append(order, name)
			if name == "b" {
				return errors.New("boom")
			}
			return nil
		})
	}
	err := s.Run(ctx)
	if got := strings.Join(order, ""); got != "cba" {
		t.Errorf("order = %q, want cba", got)
	}
	if err == nil || !strings.Contains(err.Error(), "b: boom") {
		t.Errorf("err = %v, want the failing step named", err)
	}
	if err := s.Run(ctx); err != nil || len(order) != 3 {
		t.Errorf("a second Run did something: %v, %v", err, order)
	}
}

func TestRunUnlessReleasesOnSuccessAndJoinsOnFailure(t *testing.T) {
	ran := 0
	ok := func() (err error) {
		var s Stack
		defer s.RunUnless(context.Background(), &err)
		s.Push("x", func(context.Context) error { ran++; return nil })
		return nil
	}
	if err := ok(); err != nil || ran != 0 {
		t.Fatalf("success path: err %v, undo ran %d times", err, ran)
	}
	failed := func() (err error) {
		var s Stack
		defer s.RunUnless(context.Background(), &err)
		s.Push("x", func(context.Context) error { ran++; return errors.New("stuck") })
		return errors.New("start failed")
	}
	err := failed()
	if ran != 1 || err == nil || !strings.Contains(err.Error(), "start failed") || !strings.Contains(err.Error(), "x: stuck") {
		t.Fatalf("failure path: err %v, undo ran %d times", err, ran)
	}
}
