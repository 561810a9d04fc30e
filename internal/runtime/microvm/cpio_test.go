package microvm

import (
	"bytes"
	"strconv"
	"testing"
)

// cpioEntry is an entry read back from a newc archive.
type cpioEntry struct {
	name       string
	mode       uint64
	rmaj, rmin uint64
	data       string
}

// readNewc parses a newc archive up to its trailer.
func readNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	align := func(n int) int { return (n + 3) &^ 3 }
	off := 0
	for {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) uint64 {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		mode, size, rmaj, rmin, namesize := field(1), int(field(6)), field(9), field(10), int(field(11))
		name := string(b[off+110 : off+110+namesize-1])
		off = align(off + 110 + namesize)
		data := string(b[off : off+size])
		off = align(off + size)
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Errorf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name: name, mode: mode, rmaj: rmaj, rmin: rmin, data: data})
	}
}

func TestNewcWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &newcWriter{w: &buf}
	w.dir("dev", 0o755)
	w.char("dev/console", 0o600, 5, 1)
	w.file("init", 0o755, []byte("hello"))
	w.file("empty", 0o644, nil)
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	want := []cpioEntry{
		{name: "dev", mode: 0o40755},
		{name: "dev/console", mode: 0o20600, rmaj: 5, rmin: 1},
		{name: "init", mode: 0o100755, data: "hello"},
		{name: "empty", mode: 0o100644},
	}
	got := readNewc(t, buf.Bytes())
	if len(got) != len(want) {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
