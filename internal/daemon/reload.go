package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/webhooks"
)

// ReloadPath is the route of `hutch admin reload` (POST, operators only).
const ReloadPath = client.ReloadPath

// reloader applies config reloads one at a time.
type reloader struct {
	mu sync.Mutex
	// current is the config as reloads left it: the start's, with the
	// keys applied since. Guarded by mu.
	current config.Config
}

// watchReloads reloads on SIGHUP until ctx ends, and, with tls, reloads
// the certificate when its files change. It also exports the data dir's
// disk metrics.
func (d *daemon) watchReloads(ctx context.Context) {
	d.reloads.current = d.cfg
	d.registerDiskMetrics()
	if d.certs != nil {
		go d.certs.watch(ctx)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				d.log.Info("SIGHUP: reloading")
				d.reload()
			}
		}
	}()
}

// reload reads the config file again and applies what can change live:
// api_tokens and local_socket_owner (while api_tokens stays set), the
// owners' limits (quota), image_allowlist, the warm pool's sizes
// (warm_pool and warm_pool_auto with their bounds, when the daemon started
// with a pool: the pools grow or drain to the new plan), tls
// (its files are read again on every reload, so a rotated certificate is
// taken up even when the paths did not change), webhooks, and the egress
// defaults block_private_networks and sandbox_nameservers (for the
// sandboxes whose network is made after the reload). Every other
// changed key is reported by name and keeps its old value. A file that
// does not load changes nothing.
func (d *daemon) reload() (api.ReloadResult, error) {
	d.reloads.mu.Lock()
	defer d.reloads.mu.Unlock()
	var res api.ReloadResult
	next := d.reloads.current
	if d.opts.ConfigPath != "" {
		var err error
		if next, err = config.Load(d.opts.ConfigPath); err != nil {
			d.log.Error("reload: the config does not load; nothing changed", "err", err)
			return res, err
		}
		if err := applyRuntimeFlags(d.opts, &next); err != nil {
			return res, err
		}
		res.ConfigReloaded = true
	}
	cur := &d.reloads.current
	for _, key := range config.ChangedKeys(*cur, next) {
		ok := false
		switch key {
		case "api_tokens", "local_socket_owner":
			ok = d.reloadTokens(next)
			if ok {
				cur.APITokens, cur.LocalSocketOwner = next.APITokens, next.LocalSocketOwner
			}
		case "webhooks":
			d.reloadWebhooks(cur.Webhooks, next.Webhooks)
			cur.Webhooks, ok = next.Webhooks, true
		case "quota": // issue 41: 4
			d.quota.SetQuota(next.Quota)
			cur.Quota, ok = next.Quota, true
		case "image_allowlist": // issue 41: 4
			d.mgr.ImageBook().SetImageAllowlist(next.ImageAllowlist)
			cur.ImageAllowlist, ok = next.ImageAllowlist, true
		case "tls":
			if ok = d.certs != nil && next.TLS.Enabled(); ok {
				cur.TLS = next.TLS
			}
		case "block_private_networks", "sandbox_nameservers": // issue 41: 4: networks made from now on
			cur.BlockPrivateNetworks, cur.SandboxNameservers = next.BlockPrivateNetworks, next.SandboxNameservers
			d.sbnet.SetDefaults(*cur)
			ok = true
		case "warm_pool", "warm_pool_auto", "warm_pool_max", "warm_pool_memory_mb": // issue 41: 4
			pool := *cur
			pool.WarmPool, pool.WarmPoolAuto, pool.WarmPoolMax, pool.WarmPoolMemoryMB = next.WarmPool, next.WarmPoolAuto, next.WarmPoolMax, next.WarmPoolMemoryMB
			if ok = d.mgr.SetWarmPool(pool); ok {
				*cur = pool
			}
		}
		if ok {
			res.Applied = append(res.Applied, key)
		} else {
			res.RestartNeeded = append(res.RestartNeeded, key)
		}
	}
	if slices.Contains(res.Applied, "image_allowlist") { // issue 41: 4: its first preset is the pool's base image
		d.mgr.SetWarmPool(*cur)
	}
	if d.certs != nil {
		if err := d.certs.reload(cur.TLS); err != nil {
			d.log.Error("reload: the TLS files do not load; serving the previous certificate", "err", err)
			return res, err
		}
		res.TLSReloaded = true
	}
	d.log.Info("reloaded", "applied", res.Applied, "restart_needed", res.RestartNeeded, "tls", res.TLSReloaded)
	return res, nil
}

// reloadTokens swaps in next's api_tokens and local_socket_owner; false
// when authentication would be turned on or off, which needs a restart.
func (d *daemon) reloadTokens(next config.Config) bool {
	toks, err := auth.New(next.APITokens)
	if err != nil {
		return false
	}
	return d.tokens.Replace(toks.WithLocalOwner(next.LocalSocketOwner)) == nil
}

// reloadWebhooks replaces the configured webhooks (config-1, ...); those
// added at run time stay.
func (d *daemon) reloadWebhooks(old, next []config.Webhook) {
	for i := range old {
		d.hooks.Remove(fmt.Sprintf("%s%d", webhooks.ConfigPrefix, i+1))
	}
	for i, h := range hooksOf(next) {
		h.ID = fmt.Sprintf("%s%d", webhooks.ConfigPrefix, i+1)
		d.hooks.Add(h)
	}
}

// adminRoutes serves ReloadPath in front of the API: an operator's POST
// (the Host and Origin checks of the API, its token or the local socket,
// admin_owners with api_tokens) reloads and answers a api.ReloadResult.
func (d *daemon) adminRoutes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ReloadPath && r.URL.Path != BackupPath { // issue 41: 5
			next.ServeHTTP(w, r)
			return
		}
		fail := func(err error) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(envelope.HTTPStatus(err))
			env := envelope.From(err)
			_ = json.NewEncoder(w).Encode(struct {
				Error *api.ErrorEnvelope `json:"error"`
			}{&env})
		}
		if err := d.guard.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		owner, err := d.tokens.Owner(r)
		if err != nil {
			http.Error(w, err.Error(), auth.Status(err))
			return
		}
		d.reloads.mu.Lock()
		admin := d.reloads.current.IsAdmin(owner)
		d.reloads.mu.Unlock()
		if !admin {
			fail(errdefs.New(errdefs.CodeOperatorOnly, "%s is an operator action: owner %q is not in admin_owners", r.URL.Path, owner))
			return
		}
		if r.URL.Path == BackupPath { // issue 41: 5
			d.serveBackup(w, r)
			return
		}
		res, err := d.reload()
		if err != nil {
			fail(errdefs.New(errdefs.CodeMalformed, "reload: %v (nothing changed)", err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	})
}
