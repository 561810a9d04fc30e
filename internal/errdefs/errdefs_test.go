package errdefs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestAsKeepsOuterContext(t *testing.T) {
	inner := New(CodeCapacity, "disk full").WithFix(map[string]any{"x": 1}, "free space")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bare", inner, "disk full"},
		{"wrapped", fmt.Errorf("recording sandbox X: %w", inner), "recording sandbox X: disk full"},
		{"twice", fmt.Errorf("creating: %w", fmt.Errorf("recording sandbox X: %w", inner)), "creating: recording sandbox X: disk full"},
		{"Wrap", Wrap(CodeBootFailed, errors.New("disk full"), "recording sandbox X"), "recording sandbox X: disk full"},
		{"plain", errors.New("boom"), "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := As(tt.err)
			if e.Error() != tt.want || e.Message != tt.want {
				t.Errorf("As(%v) = %q, want %q", tt.err, e.Error(), tt.want)
			}
			if !errors.Is(e, tt.err) && e != tt.err {
				t.Errorf("As(%v) does not wrap the original", tt.err)
			}
		})
	}
	got := As(fmt.Errorf("outer: %w", inner))
	if got.Code != CodeCapacity || got.FixNote != "free space" || got == inner {
		t.Errorf("As of a wrapped error = %+v; want a copy with the inner code and fix", got)
	}
	if inner.Message != "disk full" {
		t.Errorf("As changed the inner error's message to %q", inner.Message)
	}
}

func TestEveryCodeHasAKind(t *testing.T) {
	for _, c := range Codes() {
		if _, ok := codeInfo[c]; !ok {
			t.Errorf("%s has no class, kind or retryability", c)
		}
	}
	if CodeShuttingDown.Kind() != KindUnavailable || !CodeShuttingDown.Retryable() {
		t.Error("S301 must be unavailable and retryable")
	}
	if CodeImageInUse.Kind() != KindConflict {
		t.Error("S111 must be a conflict")
	}
}

// TestCodesListsEveryCode: Codes (which the docs test walks) has every
// code that has a class, and nothing twice.
func TestCodesListsEveryCode(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
	}
	for c := range codeInfo {
		if !seen[c] {
			t.Errorf("%s has a class but is not in Codes()", c)
		}
	}
}

// TestDiskFull: a host failure caused by a full disk is S402, by errno or
// by a runtime's text; the cause's text stays out of a message that hid it;
// other codes keep theirs (issue 38: 2).
func TestDiskFull(t *testing.T) {
	hidden := New(CodeInternal, "checkpointing failed").Because(errors.New("runsc: statefile: no space left on device"))
	for _, err := range []error{
		fmt.Errorf("writing config.json: %w", &os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}),
		Wrap(CodeBootFailed, syscall.ENOSPC, "starting"),
		hidden,
		fmt.Errorf("mkfs.ext4: No space left on device"),
	} {
		e := As(err)
		if e.Code != CodeDiskFull || !e.Code.Retryable() || !strings.HasPrefix(e.Message, "the daemon's disk is full: ") {
			t.Errorf("As(%v) = %s %q", err, e.Code, e.Message)
		}
	}
	if e := As(hidden); strings.Contains(e.Message, "runsc") {
		t.Errorf("the hidden cause reached the message: %q", e.Message)
	}
	fsErr := New(CodeFSIO, "write /var/big: no space left on device")
	if c := CodeOf(fsErr); c != CodeFSIO {
		t.Errorf("a sandbox's own ENOSPC: %s, want S216", c)
	}
	if c := CodeOf(errors.New("boom")); c != CodeInternal {
		t.Errorf("a plain error: %s", c)
	}
}
