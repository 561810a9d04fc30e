package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "sub"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{"a/tool", 0o644}, // shadowed by b/tool, which runs
		{"b/tool", 0o755},
		{"a/plain", 0o644},
		{"sub/rel", 0o755},
		{"top", 0o755},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.path), nil, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")

	cases := []struct {
		name     string
		cmd      string
		env      []string
		want     string
		wantCode int32
	}{
		{"first executable on PATH", "tool", []string{"PATH=" + a + ":" + b}, filepath.Join(b, "tool"), 0},
		{"last PATH wins", "tool", []string{"PATH=/nowhere", "PATH=" + b}, filepath.Join(b, "tool"), 0},
		{"default PATH", "sh", nil, "", -1}, // -1: any path ending in /sh
		{"not executable", "plain", []string{"PATH=" + a}, "", exitNotExecutable},
		{"missing", "nope", []string{"PATH=" + a + ":" + b}, "", exitNotFound},
		{"empty PATH entry is the workdir", "top", []string{"PATH=/nowhere::"}, filepath.Join(dir, "top"), 0},
		{"relative PATH entry from workdir", "rel", []string{"PATH=sub"}, filepath.Join(dir, "sub", "rel"), 0},
		{"relative path from workdir", "sub/rel", nil, filepath.Join(dir, "sub", "rel"), 0},
		{"absolute path", filepath.Join(b, "tool"), nil, filepath.Join(b, "tool"), 0},
		{"directory", a + "/", nil, "", exitNotExecutable},
		{"through a file", filepath.Join(b, "tool", "x"), nil, "", exitNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPath(tc.cmd, tc.env, dir)
			switch {
			case tc.wantCode == -1:
				if err != nil || filepath.Base(got) != "sh" {
					t.Errorf("got %q, %+v; want some sh", got, err)
				}
			case tc.wantCode != 0:
				if err == nil || err.code != tc.wantCode {
					t.Errorf("got %q, %+v; want exit code %d", got, err, tc.wantCode)
				}
			case err != nil || got != tc.want:
				t.Errorf("got %q, %+v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestOutputLimit checks the capture cap of a Start stream.
func TestOutputLimit(t *testing.T) {
	cases := []struct {
		requested int64
		want      int64
	}{
		// No cap: a streaming caller takes everything.
		{0, 0},
		{-5, 0},
		{100, 100},
		{MaxOutputBytes, MaxOutputBytes},
		{MaxOutputBytes + 1, MaxOutputBytes},
	}
	for _, tc := range cases {
		if got := outputLimit(tc.requested); got != tc.want {
			t.Errorf("outputLimit(%d) = %d, want %d", tc.requested, got, tc.want)
		}
	}
}
