package api

// ReloadResult is the answer of POST /v1/admin/reload (`hutch admin
// reload`, SIGHUP): the config keys applied live, and those that changed
// in the file but need a restart, their old values kept.
type ReloadResult struct {
	Applied       []string `json:"applied"`
	RestartNeeded []string `json:"restart_needed"`
	// ConfigReloaded says the daemon has a config file and read it;
	// TLSReloaded that it serves TLS and read its files again.
	ConfigReloaded bool `json:"config_reloaded"`
	TLSReloaded    bool `json:"tls_reloaded"`
}
