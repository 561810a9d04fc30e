package image

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestPresetsIntegration builds the real presets with mmdebstrap into the
// machine's shared test cache (once per machine, ~30 s each) and checks
// they run.
func TestPresetsIntegration(t *testing.T) {
	testutil.RequiresIntegration(t)
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Fatal("mmdebstrap is required to build presets: apt-get install mmdebstrap")
	}
	opts := Options{CacheDir: testutil.ImageCacheDir(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	s, err := NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		binary string
		check  []string // a command run in the rootfs; must not write to it
	}{
		{"python", "usr/bin/python3", []string{"/usr/bin/python3", "-B", "-c", "import ssl, sqlite3, json; assert ssl.create_default_context().get_ca_certs(); print('ok')"}},
		{"node", "usr/bin/node", []string{"/usr/bin/node", "-e", "require('https'); console.log('ok')"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultBuildTimeout)
			defer cancel()
			start := time.Now()
			img, err := s.Ensure(ctx, tt.name, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: ensured in %v, id %s, %d MB, rootfs %s", tt.name, time.Since(start).Round(time.Millisecond),
				img.ID[:12], img.SizeBytes>>20, img.Rootfs)
			for _, p := range []string{tt.binary, agentPath, "etc/ssl/certs/ca-certificates.crt", "usr/bin/git"} {
				if _, err := os.Stat(filepath.Join(img.Rootfs, p)); err != nil {
					t.Error(err)
				}
			}
			out, err := exec.CommandContext(ctx, "chroot", append([]string{img.Rootfs}, tt.check...)...).CombinedOutput()
			if err != nil || string(out) != "ok\n" {
				t.Errorf("running %v in the rootfs: %v\n%s", tt.check, err, out)
			}

			// Cached: this store answers from memory, a new one (a daemon
			// restart) from disk; neither builds (and install=false would
			// refuse an image not cached with S101).
			fresh, err := NewStore(opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, store := range []*Store{s, fresh} {
				var builds atomic.Int32
				build := store.build
				store.build = func(ctx context.Context, r recipe, dst string, progress func(string)) error {
					builds.Add(1)
					return build(ctx, r, dst, progress)
				}
				store.mu.Lock()
				_, inMemory := store.ready[tt.name]
				store.mu.Unlock()
				again, err := store.Ensure(ctx, tt.name, false)
				if err != nil || builds.Load() != 0 || inMemory != (i == 0) {
					t.Errorf("cached Ensure (store %d, in memory before: %v): %d builds, %v", i, inMemory, builds.Load(), err)
				} else if again.ID != img.ID || again.Rootfs != img.Rootfs {
					t.Errorf("cached Ensure = %+v, want %+v", again, img)
				}
			}
			if st := s.Status(tt.name); st.State != StateReady || st.ID != img.ID {
				t.Errorf("Status = %+v", st)
			}
		})
	}
}
