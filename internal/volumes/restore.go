package volumes

// MakeEmptyDisk makes file a new, empty volume file system of sizeMB, as
// Create does: `hutch admin restore` of a backup without the volumes'
// data brings each volume back empty (issue 41: 5).
func MakeEmptyDisk(file string, sizeMB uint64) error { return ext4Disks{}.Make(file, sizeMB) }
