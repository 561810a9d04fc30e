package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordsFormat: volumes.json without a format (the releases before
// formats) is read; one of a newer format is refused (issue 38: 7).
func TestRecordsFormat(t *testing.T) {
	s := &Store{opts: Options{Dir: t.TempDir()}}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(s.opts.Dir, "volumes.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"volumes":[{"id":"v1","name":"data","owner":"alice"}]}`)
	if recs, err := s.load(); err != nil || len(recs) != 1 || recs[0].Name != "data" {
		t.Fatalf("format 0: %+v, %v", recs, err)
	}
	write(`{"format":1,"volumes":[{"id":"v1","name":"data","owner":"alice"}]}`)
	if recs, err := s.load(); err != nil || len(recs) != 1 {
		t.Fatalf("format 1: %+v, %v", recs, err)
	}
	write(`{"format":2,"volumes":[]}`)
	if _, err := s.load(); err == nil || !strings.Contains(err.Error(), "format 2, newer than this daemon's 1") {
		t.Fatalf("format 2: %v", err)
	}
}
