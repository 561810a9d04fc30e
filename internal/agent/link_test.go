package agent

import (
	"bytes"
	"context"
	"io"
	"testing"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// TestRelinkHandsTheStreamToTheNextSession: a relink ends the current
// view (its blocked read returns EOF, its writes fail), the marker follows
// everything it wrote, and the bytes the host sends next, even those the
// pump was already waiting for on the old view's behalf, reach the next.
func TestRelinkHandsTheStreamToTheNextSession(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	l := NewLink(inR, outW)
	var out bytes.Buffer
	outDone := make(chan struct{})
	go func() { io.Copy(&out, outR); close(outDone) }()

	v1, _, _ := l.session(context.Background())
	go inW.Write([]byte("old"))
	if b := readSome(t, v1); b != "old" {
		t.Fatalf("first view read %q", b)
	}
	if _, err := v1.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { _, err := v1.Read(make([]byte, 16)); blocked <- err }()
	if err := l.Relink(); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != io.EOF {
		t.Fatalf("the old view's read ended with %v, want EOF", err)
	}
	if _, err := v1.Write([]byte("late")); err == nil {
		t.Error("the old view could still write")
	}

	v2, _, _ := l.session(context.Background())
	go inW.Write([]byte("new session"))
	if b := readSome(t, v2); b != "new session" {
		t.Fatalf("the next view read %q", b)
	}
	if _, err := v2.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	<-outDone
	want := "reply" + string(agentv1.RelinkMarker) + "hello"
	if out.String() != want {
		t.Errorf("the stream carried %q, want %q", out.String(), want)
	}
}

// readSome reads once from r, failing t on an error.
func readSome(t *testing.T, r io.Reader) string {
	t.Helper()
	b := make([]byte, 64)
	n, err := r.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}
