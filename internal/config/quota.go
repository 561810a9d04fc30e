package config

import "fmt"

// Quota is the quota block (issue 38): what one owner may hold at once.
// Default applies to every owner that Owners does not name; an entry of
// Owners replaces it whole for that owner. A zero field sets no limit.
type Quota struct {
	Default QuotaLimits            `yaml:"default"`
	Owners  map[string]QuotaLimits `yaml:"owners"`
}

// QuotaLimits are one owner's limits; 0 means no limit.
type QuotaLimits struct {
	// Sandboxes, CPUs and MemoryMB bound the live sandboxes and the cpus
	// and memory they were given.
	Sandboxes int    `yaml:"sandboxes" json:"sandboxes"`
	CPUs      int    `yaml:"cpus" json:"cpus"`
	MemoryMB  uint64 `yaml:"memory_mb" json:"memory_mb"`
	// Snapshots and SnapshotMB bound the snapshots kept and their bytes.
	Snapshots  int    `yaml:"snapshots" json:"snapshots"`
	SnapshotMB uint64 `yaml:"snapshot_mb" json:"snapshot_mb"`
	// Templates bounds the templates made.
	Templates int `yaml:"templates" json:"templates"`
	// Volumes and VolumeMB bound the volumes and their sizes.
	Volumes  int    `yaml:"volumes" json:"volumes"`
	VolumeMB uint64 `yaml:"volume_mb" json:"volume_mb"`
	// Ports bounds the ports exposed across the owner's sandboxes.
	Ports int `yaml:"ports" json:"ports"`
	// Jobs bounds the jobs queued or running.
	Jobs int `yaml:"jobs" json:"jobs"`
	// Processes bounds the processes running across the owner's live
	// sandboxes (every one the sandbox lists, but exited ones): an exec or
	// a process start past it is refused.
	Processes int `yaml:"processes" json:"processes"`
}

// QuotaOf returns owner's limits.
func (c *Config) QuotaOf(owner string) QuotaLimits { return c.Quota.Of(owner) }

// Of returns owner's limits under q.
func (q Quota) Of(owner string) QuotaLimits {
	if l, ok := q.Owners[owner]; ok {
		return l
	}
	return q.Default
}

// validateQuota checks the quota block (no negative limit), the body
// budget and the engine's invocation budget.
func (c *Config) validateQuota() []error {
	var errs []error
	check := func(key string, l QuotaLimits) {
		for name, v := range map[string]int{"sandboxes": l.Sandboxes, "cpus": l.CPUs, "snapshots": l.Snapshots,
			"templates": l.Templates, "volumes": l.Volumes, "ports": l.Ports, "jobs": l.Jobs, "processes": l.Processes} {
			if v < 0 {
				errs = append(errs, fmt.Errorf("%s.%s must be 0 (no limit) or more, got %d", key, name, v))
			}
		}
	}
	if c.RequestBodyBudgetMB < 16 || c.RequestBodyBudgetMB > 1<<20 {
		errs = append(errs, fmt.Errorf("request_body_budget_mb must be between 16 (the largest body) and 1048576, got %d", c.RequestBodyBudgetMB))
	}
	if c.RequestBodyBudgetPerOwnerMB < 16 || c.RequestBodyBudgetPerOwnerMB > c.RequestBodyBudgetMB {
		errs = append(errs, fmt.Errorf("request_body_budget_per_owner_mb must be between 16 (the largest body) and request_body_budget_mb (%d), got %d", c.RequestBodyBudgetMB, c.RequestBodyBudgetPerOwnerMB))
	}
	if c.EngineMaxInvocations < 1 || c.EngineMaxInvocations > 1<<20 {
		errs = append(errs, fmt.Errorf("engine_max_invocations must be between 1 and 1048576, got %d", c.EngineMaxInvocations))
	}
	if c.EngineMaxInvocationsPerOwner < 1 || c.EngineMaxInvocationsPerOwner > c.EngineMaxInvocations {
		errs = append(errs, fmt.Errorf("engine_max_invocations_per_owner must be between 1 and engine_max_invocations (%d), got %d", c.EngineMaxInvocations, c.EngineMaxInvocationsPerOwner))
	}
	check("quota.default", c.Quota.Default)
	for owner, l := range c.Quota.Owners {
		check("quota.owners."+owner, l)
	}
	return errs
}
