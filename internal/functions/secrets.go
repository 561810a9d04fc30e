package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Secrets keeps owners' secrets (internal/secrets); issue 37.
type Secrets interface {
	Set(ctx context.Context, req api.SecretSetRequest) (api.SecretInfo, error)
	List(ctx context.Context, req api.SecretListRequest) (api.SecretListResponse, error)
	Delete(ctx context.Context, req api.SecretRequest) (api.SecretInfo, error)
}

// EgressLog lists the egress proxy's recent decisions about a sandbox
// (internal/sandbox/networksvc); issue 37.
type EgressLog interface {
	EgressLog(ctx context.Context, req api.EgressLogRequest) (api.EgressLogResponse, error)
}

// registerSecrets adds sandbox::secret::* and sandbox::network::egress,
// when the table has them.
func registerSecrets(t *Table) {
	if s := t.deps.Secrets; s != nil {
		add(t, api.FnSecretSet, "Store a secret (name, value) that egress transforms write into a sandbox's requests; the value is never returned", s.Set)
		add(t, api.FnSecretList, "List your secrets: names and placeholders, never values", s.List)
		add(t, api.FnSecretDelete, "Delete a secret", s.Delete)
	}
	if e := t.deps.EgressLog; e != nil {
		add(t, api.FnEgressLog, "List the egress proxy's recent decisions about a sandbox: name, port, allowed or refused and by which rule", e.EgressLog)
	}
}
