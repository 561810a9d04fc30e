package daemon

import (
	"log/slog"
	"path/filepath"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// openVolumes opens the volume store in DATA_DIR/volumes, unmounting what
// a crashed daemon left mounted there.
func openVolumes(cfg config.Config, dataDir string, log *slog.Logger) (*volumes.Store, error) {
	return volumes.Open(volumes.Options{
		Dir:           filepath.Join(dataDir, "volumes"),
		DefaultSizeMB: cfg.VolumeDefaultSizeMB,
		MaxSizeMB:     cfg.VolumeMaxSizeMB,
		MaxPerOwner:   cfg.MaxVolumesPerOwner,
		Logger:        log,
	})
}
