// Package clusterapi makes a cluster of hutch nodes one hutch API (issue
// 36, item 1): in cluster mode (cluster.api) sandbox::create on any node
// makes the sandbox as a Pod in the owner's namespace, placed by the
// scheduler (create.go), and a call for a sandbox another node holds is
// forwarded to that node over the node-to-node channel, authenticated by
// the cluster's credential and carrying the caller's owner, which the
// holding node checks as its own (forward.go).
package clusterapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
)

// Local is what the cluster API asks of this daemon's sandboxes.
type Local interface {
	// Get describes a sandbox of the owner ctx acts for held here (S002
	// for none).
	Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error)
}

// Options are what the cluster API needs of its daemon.
type Options struct {
	// Config is the daemon's configuration (the cluster block, the
	// default size and runtime of a create).
	Config config.Config
	// Tokens authenticate the callers (nil: authentication is off).
	Tokens *auth.Tokens
	// Local is this daemon's sandboxes.
	Local  Local
	Logger *slog.Logger
}

// API is the cluster API of one node.
type API struct {
	o Options

	mu     sync.Mutex
	client kubernetes.Interface // nil until Attach
	node   string
	// namespaces are the owners' namespaces made (or found) already.
	namespaces map[string]bool
	// where is the node holding a sandbox, by id; urls a node's API URL.
	where map[string]string
	urls  map[string]string
	// misses are the ids no Pod held when last looked up, by
	// namespace/id, with when (forward.go).
	misses map[string]time.Time
	// listedAll is when every owner's Pods were last listed (holderAny).
	listedAll time.Time
}

// maxWhere bounds the cache of where sandboxes are.
const maxWhere = 1 << 16

// New makes the cluster API of a daemon; it answers once Attach gave it
// the node's client.
func New(o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &API{o: o, namespaces: map[string]bool{}, where: map[string]string{}, urls: map[string]string{}, misses: map[string]time.Time{}}
}

// Attach gives the API the node's client of the apiserver and the node's
// name, once it joined the cluster.
func (a *API) Attach(client kubernetes.Interface, node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.client, a.node = client, node
}

// kube is the node's client and name; nil before Attach.
func (a *API) kube() (kubernetes.Interface, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client, a.node
}

// remember records that node holds sandbox id.
func (a *API) remember(id, node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.where) >= maxWhere {
		clear(a.where)
	}
	a.where[id] = node
}

// E2BSecret is the secret of E2B's access tokens on a node with the
// cluster API: one for every node, made from cluster.peer_token, so that
// a token one node gave opens the sandbox on any; nil elsewhere (the
// daemon's own, in its data dir).
func E2BSecret(cfg config.Config) []byte {
	if !cfg.Cluster.API || cfg.Cluster.PeerToken == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(cfg.Cluster.PeerToken))
	m.Write([]byte("hutch cluster: E2B access tokens"))
	return m.Sum(nil)
}

// forget drops what the cache says of sandbox id (a miss on its node).
func (a *API) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.where, id)
}
