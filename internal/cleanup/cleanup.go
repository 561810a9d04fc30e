// Package cleanup undoes the steps of a start that failed half-way: each
// step that takes a resource pushes its undo, and on failure the undos run
// in reverse, once, on a context that outlives the caller's cancellation.
//
//	var undo cleanup.Stack
//	defer undo.RunUnless(ctx, &err)
//	dir, err := mkdir(...)
//	undo.Push("remove state dir", func(context.Context) error { return os.RemoveAll(dir) })
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Timeout bounds the whole of one Run.
const Timeout = 30 * time.Second

// Stack is a stack of named undo steps. The zero value is ready to use.
// It is safe for concurrent use.
type Stack struct {
	mu    sync.Mutex
	steps []step
	done  bool
}

type step struct {
	name string
	undo func(context.Context) error
}

// Push adds an undo step; it runs before every step pushed earlier.
func (s *Stack) Push(name string, undo func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, step{name, undo})
}

// Release forgets every step: the resources now belong to someone else.
func (s *Stack) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps, s.done = nil, true
}

// Run undoes every step in reverse order, once, on a context that keeps
// ctx's values but not its cancellation, bounded by Timeout. Every step
// runs even when an earlier one fails; their errors are joined, each named.
func (s *Stack) Run(ctx context.Context) error {
	s.mu.Lock()
	steps := s.steps
	s.steps, s.done = nil, true
	s.mu.Unlock()
	if len(steps) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i].undo(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", steps[i].name, err))
		}
	}
	return errors.Join(errs...)
}

// RunUnless runs the stack when *errp is not nil, joining what the undos
// report into it; on success it releases the stack. Defer it right after
// the stack is declared.
func (s *Stack) RunUnless(ctx context.Context, errp *error) {
	if *errp == nil {
		s.Release()
		return
	}
	if err := s.Run(ctx); err != nil {
		*errp = errors.Join(*errp, fmt.Errorf("cleaning up: %w", err))
	}
}
