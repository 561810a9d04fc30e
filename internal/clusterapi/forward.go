package clusterapi

// The node-to-node channel: a call on this node for a sandbox another node
// holds is forwarded to that node's API, as it came (a reverse proxy:
// streams, uploads, downloads and WebSocket upgrades pass through), with
// the cluster's credential and the caller's owner, which the holding node
// acts for (auth.WithPeerOwner): its lookups are that owner's, as any
// caller's. A call that carries an owner without the credential is
// refused; a forwarded call is never forwarded again.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/previewhost"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Headers of a forwarded call.
const (
	// HeaderToken carries the cluster's credential (cluster.peer_token).
	HeaderToken = "X-Hutch-Cluster-Token"
	// HeaderOwner carries the owner the forwarding node authenticated.
	HeaderOwner = "X-Hutch-Cluster-Owner"
)

// peekBytes is how much of a function call's body is read for its
// sandbox_id; a sandbox_id past it is not seen (the call is then this
// node's).
const peekBytes = 64 << 10

// Wrap puts the node-to-node channel in front of the daemon's HTTP API:
// a forwarded call is checked and served here for its owner; a call for a
// sandbox this node does not hold and another does is forwarded there;
// every other call goes to next.
func (a *API) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, fwd := r.Header[HeaderOwner]; fwd || r.Header.Get(HeaderToken) != "" {
			a.servePeer(w, r, next)
			return
		}
		if id := a.addressedSandbox(r); id != "" {
			// The holding node serves it whole, under its own rules.
			if target, ok := a.holderAny(r.Context(), id); ok {
				a.forward(w, r, target, id, "", false)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		id, r := sandboxOf(r)
		if id == "" {
			next.ServeHTTP(w, r)
			return
		}
		owner, err := a.o.Tokens.Owner(r)
		if err != nil {
			next.ServeHTTP(w, r) // the API refuses it
			return
		}
		target, ok := a.holder(auth.WithOwner(r.Context(), owner), id)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		a.forward(w, r, target, id, owner, true)
	})
}

// addressedSandbox is the sandbox r names by its Host (a preview host,
// E2B's envd and interpreter hosts: {port}-{id}.{preview_domain}) or by
// a header route's headers (E2b-Sandbox-Id, Hutch-Sandbox-Id); "" for
// none.
func (a *API) addressedSandbox(r *http.Request) string {
	if domain := a.o.Config.PreviewDomain; domain != "" {
		if _, id, err := previewhost.Parse(r.Host, domain); err == nil {
			return id
		}
	}
	if id := r.Header.Get(api.HeaderE2BSandboxID); id != "" {
		return id
	}
	return r.Header.Get(api.HeaderSandboxID)
}

// servePeer serves a call another node forwarded: with the cluster's
// credential, for the owner it carries; without it, refused (403).
func (a *API) servePeer(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !a.peerToken(r.Header.Get(HeaderToken)) {
		writeError(w, http.StatusForbidden, api.ErrorEnvelope{Type: string(errdefs.ClassValidation), Code: "forbidden",
			Message: "a call forwarded between nodes must carry the cluster's credential (cluster.peer_token)"})
		return
	}
	ctx := context.WithValue(r.Context(), fromPeerKey{}, true)
	if owner, ok := r.Header[HeaderOwner]; ok && len(owner) == 1 {
		ctx = auth.WithPeerOwner(ctx, owner[0])
	} // else the call authenticates as any (a sandbox addressed by host)
	r = r.WithContext(ctx)
	r.Header.Del(HeaderToken)
	r.Header.Del(HeaderOwner)
	next.ServeHTTP(w, r)
}

// peerToken says tok is the cluster's credential (compared in constant
// time).
func (a *API) peerToken(tok string) bool {
	want := sha256.Sum256([]byte(a.o.Config.Cluster.PeerToken))
	got := sha256.Sum256([]byte(tok))
	return tok != "" && a.o.Config.Cluster.PeerToken != "" && subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// sandboxOf is the sandbox a call is for: the {id} of /v1/sandboxes/{id}
// and below it, or the sandbox_id of a function call's body (read up to
// peekBytes; r's body is given back whole); "" for none.
func sandboxOf(r *http.Request) (string, *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/sandboxes/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		return id, r
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/functions/") || r.Method != http.MethodPost || r.Body == nil {
		return "", r
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, peekBytes))
	body := r.Body
	r2 := r.Clone(r.Context())
	r2.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), body), body}
	if err != nil {
		return "", r2
	}
	return topLevelSandboxID(head), r2
}

// topLevelSandboxID is the "sandbox_id" string of the JSON object that
// starts b, "" when b does not show one.
func topLevelSandboxID(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == "sandbox_id" {
			var id string
			if dec.Decode(&id) != nil {
				return ""
			}
			return id
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// holder is the API URL of the node that holds sandbox id of the owner
// ctx acts for, when that is another node: false when this node holds it
// (or no node does: the call is answered here).
func (a *API) holder(ctx context.Context, id string) (*url.URL, bool) {
	client, self := a.kube()
	if client == nil {
		return nil, false
	}
	if _, err := a.o.Local.Get(ctx, api.GetRequest{SandboxID: id}); err == nil || !errdefs.Is(err, errdefs.CodeNotFound) {
		return nil, false
	}
	ns := kubenode.OwnerNamespace(a.o.Config.Cluster.NamespacePrefix, auth.OwnerFrom(ctx))
	a.mu.Lock()
	node, cached := a.where[id]
	missed := a.missed(ns+"/"+id, time.Now())
	a.mu.Unlock()
	if missed {
		return nil, false
	}
	if !cached {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubenode.LabelAPI + "=true"})
		if err != nil {
			a.o.Logger.Warn("looking up a sandbox's Pod", "sandbox", id, "namespace", ns, "err", err)
			return nil, false
		}
		if node = podNode(pods.Items, id); node == "" {
			a.mu.Lock()
			a.miss(ns+"/"+id, time.Now())
			a.mu.Unlock()
			return nil, false
		}
		a.remember(id, node)
	}
	return a.remote(ctx, node, self)
}

// remote is node's API URL, when node is not self (this node).
func (a *API) remote(ctx context.Context, node, self string) (*url.URL, bool) {
	if node == self {
		return nil, false
	}
	u, err := a.nodeURL(ctx, node)
	if err != nil {
		a.o.Logger.Warn("finding a node's API", "node", node, "err", err)
		return nil, false
	}
	return u, true
}

// holderAny is the API URL of the node holding sandbox id, whoever owns
// it, when that is another node: from the cache, else from a list of
// every owner's Pods, made at most once a missTTL (a request that names
// a sandbox by its host may carry no owner's token).
func (a *API) holderAny(ctx context.Context, id string) (*url.URL, bool) {
	client, self := a.kube()
	if client == nil {
		return nil, false
	}
	if _, err := spec.ParseID(id); err != nil {
		return nil, false
	}
	now := time.Now()
	a.mu.Lock()
	node, cached := a.where[id]
	stale := now.Sub(a.listedAll) >= missTTL
	if !cached && stale {
		a.listedAll = now
	}
	a.mu.Unlock()
	if !cached && !stale {
		return nil, false
	}
	if !cached {
		pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: kubenode.LabelAPI + "=true"})
		if err != nil {
			a.o.Logger.Warn("looking up a sandbox's Pod", "sandbox", id, "err", err)
			return nil, false
		}
		for _, p := range pods.Items {
			if cs := p.Status.ContainerStatuses; len(cs) == 1 && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				if sid, ok := strings.CutPrefix(cs[0].ContainerID, kubenode.ContainerIDPrefix); ok {
					a.remember(sid, p.Spec.NodeName)
				}
			}
		}
		if node = podNode(pods.Items, id); node == "" {
			return nil, false
		}
	}
	return a.remote(ctx, node, self)
}

// Lookup misses: an id no Pod of the owner's holds is answered by this
// node (S002) for missTTL without another Pod list; at most maxMisses
// are kept.
const (
	missTTL   = 3 * time.Second
	maxMisses = 4096
)

// missed says key (namespace/id) missed within missTTL of now; a.mu held.
func (a *API) missed(key string, now time.Time) bool {
	at, ok := a.misses[key]
	if ok && now.Sub(at) >= missTTL {
		delete(a.misses, key)
		return false
	}
	return ok
}

// miss records that key missed at now, dropping the expired misses when
// the cache is full, and every one when that is not enough; a.mu held.
func (a *API) miss(key string, now time.Time) {
	if len(a.misses) >= maxMisses {
		for k, at := range a.misses {
			if now.Sub(at) >= missTTL {
				delete(a.misses, k)
			}
		}
		if len(a.misses) >= maxMisses {
			clear(a.misses)
		}
	}
	a.misses[key] = now
}

// podNode is the node of the Pod among pods whose container is sandbox
// id, "" for none.
func podNode(pods []corev1.Pod, id string) string {
	for _, p := range pods {
		if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].ContainerID == kubenode.ContainerIDPrefix+id && p.DeletionTimestamp == nil {
			return p.Spec.NodeName
		}
	}
	return ""
}

// nodeURL is node's API URL, from its Node's hutch.dev/api-url
// annotation (cached).
func (a *API) nodeURL(ctx context.Context, node string) (*url.URL, error) {
	a.mu.Lock()
	s, ok := a.urls[node]
	a.mu.Unlock()
	if !ok {
		client, _ := a.kube()
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if s = n.Annotations[kubenode.AnnotationAPIURL]; s == "" {
			return nil, errdefs.New(errdefs.CodeInternal, "node %s has no %s annotation", node, kubenode.AnnotationAPIURL)
		}
		a.mu.Lock()
		a.urls[node] = s
		a.mu.Unlock()
	}
	return url.Parse(s)
}

// forward sends r to the node at target as owner's (carry), or as it came
// (its Host and credentials, which that node checks), and its answer
// back; a miss there (404, or the node unreachable) drops what the cache
// says of sandbox id and of that node's URL.
func (a *API) forward(w http.ResponseWriter, r *http.Request, target *url.URL, id, owner string, carry bool) {
	drop := func() {
		a.forget(id)
		a.mu.Lock()
		for n, u := range a.urls {
			if u == target.String() {
				delete(a.urls, n)
			}
		}
		a.mu.Unlock()
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(HeaderToken, a.o.Config.Cluster.PeerToken)
			if !carry {
				// A preview host is the holding node's too; any other
				// Host is this node's name, which that node may refuse.
				if _, _, err := previewhost.Parse(r.Host, a.o.Config.PreviewDomain); err == nil && a.o.Config.PreviewDomain != "" {
					pr.Out.Host = r.Host
				}
				pr.Out.Header.Del(HeaderOwner)
				return
			}
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization") // the owner goes as the cluster's
			pr.Out.Header[HeaderOwner] = []string{owner}
		},
		FlushInterval: -1, // streams as they come
		ModifyResponse: func(resp *http.Response) error {
			// A 404 of a call forwarded as it came may be the
			// sandbox's own server's (a preview): the sandbox is there.
			if resp.StatusCode == http.StatusNotFound && carry {
				a.forget(id)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			drop()
			a.o.Logger.Warn("forwarding a call to the node holding its sandbox", "sandbox", id, "node_api", target.Host, "err", err)
			writeError(w, http.StatusBadGateway, envelope.From(errdefs.New(errdefs.CodeInternal,
				"the node holding sandbox %s did not answer; try again", id)))
		},
	}
	// The holding node bounds the call's reading and writing (its
	// deadlines move with a transfer's progress, which this node does
	// not see): its connection's deadlines are lifted here.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	rp.ServeHTTP(w, r)
}

// writeError answers an error envelope, as the API does.
func writeError(w http.ResponseWriter, status int, env api.ErrorEnvelope) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error api.ErrorEnvelope `json:"error"`
	}{env})
}

// Forward runs function fn on req on the node that holds the sandbox
// req's sandbox_id names, when that is another node
// (functions.Cluster): the table's calls of every transport that is not
// forwarded as HTTP (MCP, the engine WebSocket). A node's own call, or
// one another node forwarded, is this node's.
func (a *API) Forward(ctx context.Context, fn string, req any, resp reflect.Type) (any, bool, error) {
	target, id, body, ok := a.tableTarget(ctx, req)
	if !ok {
		return nil, false, nil
	}
	out := reflect.New(resp)
	if err := a.peerCall(ctx, 0, target.String(), auth.OwnerFrom(ctx), fn, body, out.Interface()); err != nil {
		return nil, true, a.peerError(id, err)
	}
	return out.Elem().Interface(), true, nil
}

// tableTarget is the node holding the sandbox whose sandbox_id a table
// call's req names, when that is another node, with req as JSON; false
// for this node's call (a node's own, one another node forwarded, or for
// a sandbox here or nowhere).
func (a *API) tableTarget(ctx context.Context, req any) (target *url.URL, id string, body []byte, ok bool) {
	if kubenode.IsOnNode(ctx) || fromPeer(ctx) {
		return nil, "", nil, false
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, "", nil, false
	}
	if id = topLevelSandboxID(body); id == "" {
		return nil, "", nil, false
	}
	target, ok = a.holder(ctx, id)
	return target, id, body, ok
}
