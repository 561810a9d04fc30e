package clusterapi

// sandbox::list in cluster mode: the caller's sandboxes on every hutch
// node, one listing in the order and pages of a node's own (by creation,
// then id; next_token a key of that order, which every node reads).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// peerTimeout bounds a call this node makes to another for a listing.
const peerTimeout = 10 * time.Second

// peerClient makes the node-to-node calls of the table (peerCall).
var peerClient = &http.Client{}

// List is sandbox::list over the cluster: this node's listing (local) and
// every other hutch node's for the same owner, merged; a node that does
// not answer is left out (and logged). A node's own listing, or one
// another node asked for, is this node's alone.
func (a *API) List(ctx context.Context, req api.ListRequest, local func(context.Context, api.ListRequest) (api.ListResponse, error)) (api.ListResponse, error) {
	mine, err := local(ctx, req)
	client, self := a.kube()
	if err != nil || client == nil {
		return mine, err
	}
	if kubenode.IsOnNode(ctx) || fromPeer(ctx) {
		for i := range mine.Sandboxes {
			mine.Sandboxes[i].Node = self
		}
		return mine, nil
	}
	for i := range mine.Sandboxes {
		mine.Sandboxes[i].Node = self
	}
	peers, err := a.peers(ctx)
	if err != nil {
		return api.ListResponse{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return api.ListResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		merged = append([]api.SandboxInfo{}, mine.Sandboxes...)
		more   = mine.NextToken != ""
	)
	for _, n := range peers {
		wg.Go(func() {
			var theirs api.ListResponse
			if err := a.peerCall(ctx, peerTimeout, n.url, owner, api.FnList, body, &theirs); err != nil {
				a.o.Logger.Warn("listing a node's sandboxes", "node", n.name, "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			merged = append(merged, theirs.Sandboxes...)
			more = more || theirs.NextToken != ""
		})
	}
	wg.Wait()
	sort.Slice(merged, func(i, j int) bool { return pageKey(merged[i]).Precedes(pageKey(merged[j]), req.NewestFirst) })
	out := api.ListResponse{Sandboxes: merged}
	if req.Limit > 0 && len(merged) > req.Limit {
		out.Sandboxes, more = merged[:req.Limit], true
	}
	if more && len(out.Sandboxes) > 0 {
		out.NextToken = pageKey(out.Sandboxes[len(out.Sandboxes)-1]).Token()
	}
	return out, nil
}

// peer is another hutch node of the cluster: its name and API URL.
type peer struct{ name, url string }

// peers are the cluster's other hutch nodes that serve the cluster API.
func (a *API) peers(ctx context.Context) ([]peer, error) {
	client, self := a.kube()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubenode.LabelNode + "=true"})
	if err != nil {
		return nil, apiError("listing the cluster's nodes", err)
	}
	var out []peer
	for _, n := range nodes.Items {
		if u := n.Annotations[kubenode.AnnotationAPIURL]; n.Name != self && u != "" {
			out = append(out, peer{n.Name, u})
		}
	}
	return out, nil
}

// pageKey is info's place in a listing.
func pageKey(info api.SandboxInfo) spec.PageKey {
	created, _ := time.Parse(time.RFC3339Nano, info.CreatedAt)
	return spec.PageKey{Created: created, ID: info.SandboxID}
}

// peerCall calls function fn of the node at target for owner over the
// node-to-node channel, with the JSON request body, decoding its answer
// into out, within timeout (0: ctx's); the node's error is an
// *api.ErrorEnvelope.
func (a *API) peerCall(ctx context.Context, timeout time.Duration, target, owner, fn string, body []byte, out any) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	resp, err := a.peerRequest(ctx, target, owner, fn, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerAnswer+1))
	switch {
	case err != nil:
		return err
	case len(raw) > maxPeerAnswer:
		return fmt.Errorf("%s answered more than %d bytes", fn, maxPeerAnswer)
	}
	return json.Unmarshal(raw, out)
}

// peerRequest sends function fn's call to the node at target for owner,
// accepting the media type accept; an answer but 200 OK is its error (an
// *api.ErrorEnvelope when it says one).
func (a *API) peerRequest(ctx context.Context, target, owner, fn string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target+"/v1/functions/"+url.PathEscape(fn), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set(HeaderToken, a.o.Config.Cluster.PeerToken)
	req.Header[HeaderOwner] = []string{owner}
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error *api.ErrorEnvelope `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != nil && e.Error.Code != "" {
		return nil, e.Error
	}
	return nil, fmt.Errorf("%s: %s %.300s", fn, resp.Status, raw)
}

// maxPeerAnswer bounds a node's answer to a listing.
const maxPeerAnswer = 64 << 20

type fromPeerKey struct{}

// fromPeer says ctx is a call another node forwarded (servePeer).
func fromPeer(ctx context.Context) bool { v, _ := ctx.Value(fromPeerKey{}).(bool); return v }
