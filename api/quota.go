package api

// Quotas (issue 38, hutch extension): what the caller's owner holds
// against the limits of the daemon's quota block.

// FnQuota is the function that reports the caller's quota.
const FnQuota = "sandbox::quota"

// QuotaRequest asks for the caller's quota; it has no fields.
type QuotaRequest struct{}

// QuotaItem is one limit and its use.
type QuotaItem struct {
	// Name is the limit's key in the quota block (sandboxes, cpus, ...).
	Name string `json:"name"`
	// Used is what the owner holds now; Limit is its limit, 0 for none.
	Used  uint64 `json:"used"`
	Limit uint64 `json:"limit"`
	// Key is the config key that sets the limit.
	Key string `json:"key"`
}

// QuotaResponse is the result of sandbox::quota.
type QuotaResponse struct {
	Owner string      `json:"owner"`
	Items []QuotaItem `json:"items"`
}
