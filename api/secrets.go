package api

// Secrets (issue 37): owner-scoped values that hutch's egress proxy
// writes into a sandbox's requests (EgressTransform); never returned once
// set, never inside a sandbox.

// Function ids of the secrets and of the egress log.
const (
	FnSecretSet    = "sandbox::secret::set"
	FnSecretList   = "sandbox::secret::list"
	FnSecretDelete = "sandbox::secret::delete"
	FnEgressLog    = "sandbox::network::egress"
)

// EventEgressSecretUsed is recorded when the egress proxy wrote a secret
// into a request ({"secret", "host"}; never the value), rate-limited per
// sandbox.
const EventEgressSecretUsed = "egress.secret_used"

// SecretPlaceholderPrefix starts the placeholder of a secret: what a
// sandbox holds (in its env, say) in place of the value.
const SecretPlaceholderPrefix = "hutch-secret-placeholder-"

// SecretPlaceholder is the placeholder of secret name.
func SecretPlaceholder(name string) string { return SecretPlaceholderPrefix + name }

// SecretSetRequest is the payload of sandbox::secret::set.
type SecretSetRequest struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SecretRequest names a secret (sandbox::secret::delete).
type SecretRequest struct {
	Name string `json:"name"`
}

// SecretListRequest is the payload of sandbox::secret::list.
type SecretListRequest struct{}

// SecretInfo describes a secret, never its value.
type SecretInfo struct {
	Name        string `json:"name"`
	Placeholder string `json:"placeholder"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// SecretListResponse is the result of sandbox::secret::list.
type SecretListResponse struct {
	Secrets []SecretInfo `json:"secrets"`
}

// EgressLogRequest is the payload of sandbox::network::egress.
type EgressLogRequest struct {
	SandboxID string `json:"sandbox_id"`
}

func (r *EgressLogRequest) SandboxIDField() *string { return &r.SandboxID }

// EgressDecision is one decision of the egress proxy.
type EgressDecision struct {
	Time string `json:"time"`
	// Kind is what was decided on: "sni", "host" or "address".
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	Address string `json:"address,omitempty"`
	Port    uint16 `json:"port"`
	Allowed bool   `json:"allowed"`
	// Rule is the policy entry (or closed range) that decided.
	Rule string `json:"rule,omitempty"`
	// Secrets are the secrets written into the request (names).
	Secrets []string `json:"secrets,omitempty"`
}

// EgressLogResponse is the result of sandbox::network::egress: the
// sandbox's recent decisions, oldest first.
type EgressLogResponse struct {
	SandboxID string           `json:"sandbox_id"`
	Decisions []EgressDecision `json:"decisions"`
}

func (r *SecretRequest) NameField() *string { return &r.Name }
