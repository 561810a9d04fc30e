package envd

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// A refused write is made again from the body's start while no more was
// read than kept; after that it cannot be.
func TestReplayable(t *testing.T) {
	b := &replayable{r: strings.NewReader("hello world")}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(b, buf); err != nil {
		t.Fatal(err)
	}
	again, ok := b.again()
	if !ok {
		t.Fatal("a body read 5 bytes into cannot be read again")
	}
	if got, _ := io.ReadAll(again); string(got) != "hello world" {
		t.Fatalf("again = %q", got)
	}

	big := &replayable{r: bytes.NewReader(make([]byte, maxReplayBytes+10))}
	if _, err := io.Copy(io.Discard, big); err != nil {
		t.Fatal(err)
	}
	if _, ok := big.again(); ok {
		t.Fatal("a body read past what it keeps was replayed")
	}
}
