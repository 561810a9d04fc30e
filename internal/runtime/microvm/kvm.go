package microvm

// KVMUsable says why hardware KVM cannot run microVMs here, or nil: what
// accel auto decides by (`hutch doctor` reports it; issue 41).
func KVMUsable() error { return kvmUsable() }
