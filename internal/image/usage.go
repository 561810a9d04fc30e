package image

import "os"

// CacheBytes is the size of every image published in the cache: the sum
// of their root filesystems' apparent sizes (image.json size_bytes), read
// afresh on each call so that another daemon's builds and removals count.
// Unreadable entries are skipped.
func (s *Store) CacheBytes() int64 {
	entries, err := os.ReadDir(s.cache.imagesDir())
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if img, err := s.cache.load(e.Name()); err == nil {
			total += img.SizeBytes
		}
	}
	return total
}
