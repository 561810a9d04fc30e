package daemon

import (
	"log/slog"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/config"
)

// warnDiskBudget logs a warning when the file system of the data dir,
// where every sandbox's writable layer lives, has less room than
// max_concurrent_sandboxes full layers of writable_layer_mb: sandboxes
// that fill their layers could then fill the disk before their own limit.
func warnDiskBudget(log *slog.Logger, dataDir string, cfg config.Config) {
	var st unix.Statfs_t
	if err := unix.Statfs(dataDir, &st); err != nil {
		return
	}
	free := st.Bavail * uint64(st.Bsize)
	budget := uint64(cfg.MaxConcurrentSandboxes) * cfg.WritableLayerMB << 20
	if budget > free {
		log.Warn("the data dir has less free space than every sandbox may write; lower writable_layer_mb or max_concurrent_sandboxes",
			"data_dir", dataDir, "free_mb", free>>20, "writable_layer_mb", cfg.WritableLayerMB,
			"max_concurrent_sandboxes", cfg.MaxConcurrentSandboxes)
	}
}
