package e2bapi

// E2B's egress surface (issue 37): a create's network block and PUT
// /sandboxes/{id}/network map onto hutch's egress policy (allowOut and
// denyOut as they are, rules' header transforms as transforms with
// "${e2b.secrets.NAME}" read as hutch's "{{secret.NAME}}"); /secrets onto
// sandbox::secret::*. What hutch does not do (a SOCKS egress proxy,
// HTTPS sandbox ports) answers 400 with the reason, never a silent
// accept. allowPublicTraffic and maskRequestHost are preview terms
// (preview.go), given on create only.

import (
	"context"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// networkRule is one entry of a network block's rules.
type networkRule struct {
	Transform *struct {
		Headers map[string]string `json:"headers"`
	} `json:"transform"`
}

// e2bSecretRef is E2B's placeholder of a secret in a header.
var e2bSecretRef = regexp.MustCompile(`\$\{e2b\.secrets\.([^{}\s]+)\}`)

// egress is the hutch egress policy of n (nil: none); S001 for what hutch
// does not support.
func (n *networkConfig) egress() (*api.EgressPolicy, error) {
	if n == nil {
		return nil, nil
	}
	switch {
	case len(n.HTTPSPorts) > 0:
		return nil, errdefs.Malformed("network.httpsPorts is not supported by hutch")
	case n.EgressProxy != nil && string(n.EgressProxy) != "null":
		return nil, errdefs.Malformed("network.egressProxy (a SOCKS5 upstream) is not supported by hutch")
	}
	p := &api.EgressPolicy{AllowOut: n.AllowOut, DenyOut: n.DenyOut}
	hosts := make([]string, 0, len(n.Rules))
	for h := range n.Rules {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		headers := map[string]string{}
		for _, r := range n.Rules[host] {
			if r.Transform == nil {
				continue
			}
			for k, v := range r.Transform.Headers {
				headers[k] = e2bSecretRef.ReplaceAllString(v, "{{secret.$1}}")
			}
		}
		if len(headers) > 0 {
			p.Transforms = append(p.Transforms, api.EgressTransform{Host: strings.ToLower(host), Headers: headers})
		}
	}
	if p.Empty() {
		return nil, nil
	}
	return p, nil
}

// networkUpdate is the body of PUT /sandboxes/{id}/network.
type networkUpdate struct {
	networkConfig
	AllowInternetAccess *bool `json:"allow_internet_access"`
}

// networkRoutes adds E2B's network and secrets routes.
func (tr *Transport) networkRoutes() {
	for pattern, h := range map[string]controlFunc{
		"PUT /sandboxes/{id}/network": tr.updateNetwork,
		"GET /secrets":                tr.listSecrets,
		"POST /secrets":               tr.createSecret,
		"GET /secrets/{secret}":       tr.getSecret,
		"POST /secrets/{secret}":      tr.updateSecret,
		"DELETE /secrets/{secret}":    tr.deleteSecret,
	} {
		tr.control.Handle(pattern, tr.serve(h))
	}
}

// updateNetwork replaces a running sandbox's egress policy; omitted
// fields are cleared, as E2B's.
func (tr *Transport) updateNetwork(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in networkUpdate
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	if in.AllowPublicTraffic != nil || in.MaskRequestHost != "" {
		return answer{}, errdefs.Malformed("network.allowPublicTraffic and network.maskRequestHost are given on create only")
	}
	p, err := in.egress()
	if err != nil {
		return answer{}, err
	}
	if p == nil {
		p = &api.EgressPolicy{}
	}
	if in.AllowInternetAccess != nil && !*in.AllowInternetAccess {
		p.DenyOut = append(p.DenyOut, "0.0.0.0/0")
	}
	_, err = functions.Call[api.SandboxNetwork](ctx, tr.t, api.FnNetworkUpdate, api.NetworkUpdateRequest{SandboxID: r.PathValue("id"), EgressPolicy: *p})
	return answer{status: http.StatusNoContent}, err
}

// secretInfo is E2B's Secret.
type secretInfo struct {
	SecretID       string            `json:"secretID"`
	Name           string            `json:"name"`
	CurrentVersion int64             `json:"currentVersion"`
	Metadata       map[string]string `json:"metadata"`
	CreatedAt      string            `json:"createdAt"`
	UpdatedAt      string            `json:"updatedAt"`
}

// secretIDPrefix starts E2B's secret ids; hutch's id is the name after it.
const secretIDPrefix = "sec_"

func e2bSecret(s api.SecretInfo) secretInfo {
	return secretInfo{SecretID: secretIDPrefix + s.Name, Name: s.Name, CurrentVersion: 1, Metadata: map[string]string{}, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// secretName is the name {secret} names: a secret id or a name.
func secretName(r *http.Request) string {
	s := r.PathValue("secret")
	return strings.ToLower(strings.TrimPrefix(s, secretIDPrefix))
}

func (tr *Transport) listSecrets(ctx context.Context, _ *http.Request, _ []byte) (answer, error) {
	res, err := functions.Call[api.SecretListResponse](ctx, tr.t, api.FnSecretList, api.SecretListRequest{})
	out := make([]secretInfo, 0, len(res.Secrets))
	for _, s := range res.Secrets {
		out = append(out, e2bSecret(s))
	}
	return answer{status: http.StatusOK, body: out}, err
}

func (tr *Transport) setSecret(ctx context.Context, name, value string, status int) (answer, error) {
	res, err := functions.Call[api.SecretInfo](ctx, tr.t, api.FnSecretSet, api.SecretSetRequest{Name: strings.ToLower(name), Value: value})
	return answer{status: status, body: e2bSecret(res)}, err
}

func (tr *Transport) createSecret(ctx context.Context, _ *http.Request, body []byte) (answer, error) {
	var in struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	return tr.setSecret(ctx, in.Name, in.Value, http.StatusCreated)
}

// findSecret is the caller's secret {secret} names; 404 without one.
func (tr *Transport) findSecret(ctx context.Context, r *http.Request) (api.SecretInfo, error) {
	res, err := functions.Call[api.SecretListResponse](ctx, tr.t, api.FnSecretList, api.SecretListRequest{})
	if err != nil {
		return api.SecretInfo{}, err
	}
	name := secretName(r)
	for _, s := range res.Secrets {
		if s.Name == name {
			return s, nil
		}
	}
	return api.SecretInfo{}, errdefs.New(errdefs.CodeNoSecret, "no secret %s", name)
}

func (tr *Transport) getSecret(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	s, err := tr.findSecret(ctx, r)
	return answer{status: http.StatusOK, body: e2bSecret(s)}, err
}

func (tr *Transport) updateSecret(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in struct {
		Value string `json:"value"`
	}
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	s, err := tr.findSecret(ctx, r)
	if err != nil {
		return answer{}, err
	}
	return tr.setSecret(ctx, s.Name, in.Value, http.StatusOK)
}

func (tr *Transport) deleteSecret(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	_, err := functions.Call[api.SecretInfo](ctx, tr.t, api.FnSecretDelete, api.SecretRequest{Name: secretName(r)})
	return answer{status: http.StatusNoContent}, err
}
