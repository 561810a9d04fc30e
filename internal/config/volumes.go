package config

import "fmt"

// MinVolumeMB is the smallest volume ext4 holds comfortably (its metadata
// takes some of it); maxVolumeMB is 1 TiB.
const (
	MinVolumeMB = 8
	maxVolumeMB = 1 << 20
)

// validateVolumes checks volume_default_size_mb, volume_max_size_mb and
// max_volumes_per_owner.
func (c *Config) validateVolumes() []error {
	var errs []error
	if c.VolumeMaxSizeMB < MinVolumeMB || c.VolumeMaxSizeMB > maxVolumeMB {
		errs = append(errs, fmt.Errorf("volume_max_size_mb must be between %d and %d, got %d", MinVolumeMB, maxVolumeMB, c.VolumeMaxSizeMB))
	}
	if c.VolumeDefaultSizeMB < MinVolumeMB || c.VolumeDefaultSizeMB > c.VolumeMaxSizeMB {
		errs = append(errs, fmt.Errorf("volume_default_size_mb must be between %d and volume_max_size_mb (%d), got %d", MinVolumeMB, c.VolumeMaxSizeMB, c.VolumeDefaultSizeMB))
	}
	if c.MaxVolumesPerOwner < 0 || c.MaxVolumesPerOwner > 10_000 {
		errs = append(errs, fmt.Errorf("max_volumes_per_owner must be between 0 (no cap) and 10000, got %d", c.MaxVolumesPerOwner))
	}
	return errs
}
