package cgroups

// PidsLimitHits is how many times a fork or clone in cgroup rel failed
// because the cgroup had reached pids.max (the "max" line of pids.events,
// on v1 and v2 alike).
func (l Layout) PidsLimitHits(rel string) (uint64, error) {
	return readKey(l.Path("pids", rel), "pids.events", "max")
}
