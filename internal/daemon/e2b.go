package daemon

import (
	"log/slog"
	"time"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/clusterapi"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/e2bapi"
	"github.com/hutch-dev/hutch/internal/e2bapi/envd"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// e2bTransport is the E2B-compatible transport of cfg: its keys, the
// token secret of dataDir, its templates, and envd over table.
func e2bTransport(cfg config.Config, dataDir string, table *functions.Table, guard *webguard.Policy, previews e2bapi.Previews, write time.Duration, log *slog.Logger) (*e2bapi.Transport, error) {
	keys, err := auth.NewNamed("e2b.api_keys", cfg.E2B.APIKeys)
	if err != nil {
		return nil, err
	}
	var signer *e2bapi.Signer
	if secret := clusterapi.E2BSecret(cfg); secret != nil { // issue 36: one for every node
		signer, err = e2bapi.NewSigner(secret)
	} else {
		signer, err = e2bapi.LoadSigner(dataDir)
	}
	if err != nil {
		return nil, err
	}
	return e2bapi.New(table, e2bapi.Options{Logger: log, Keys: keys, Open: !cfg.MultiOwner(), Signer: signer,
		Envd: envd.New(table, log), Templates: cfg.E2B.Templates, PreviewDomain: cfg.PreviewDomain, Guard: guard, WriteTimeout: write, Previews: previews}), nil
}
