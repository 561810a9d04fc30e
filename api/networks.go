package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Networks (hutch extensions): sandbox-to-sandbox networks and egress
// policies for sandboxes created with network: true.

// Function ids of the network functions.
const (
	FnNetworkCreate     = "sandbox::network::create"
	FnNetworkList       = "sandbox::network::list"
	FnNetworkDelete     = "sandbox::network::delete"
	FnNetworkConnect    = "sandbox::network::connect"
	FnNetworkDisconnect = "sandbox::network::disconnect"
	FnNetworkUpdate     = "sandbox::network::update"
)

// EventEgressDenied is recorded when a sandbox's egress policy refused
// names its resolver was asked ({"name", "count"}, or {"other_names":
// true, "count"} past 32 names in 5 s) or connections ({"packets",
// "total"}).
const EventEgressDenied = "egress.denied"

// EgressPolicy is what a sandbox may reach outside. Entries are IPv4
// addresses or CIDRs, host names, or "*." wildcards (any name under the
// domain), each with an optional ":port". With allow_out, everything else
// is refused; deny_out wins over allow_out.
type EgressPolicy struct {
	AllowOut []string `json:"allow_out,omitempty"`
	DenyOut  []string `json:"deny_out,omitempty"`
	// Transforms (issue 37) set headers of the HTTPS requests toward a
	// host, with owner secrets ("{{secret.NAME}}") the sandbox never sees.
	Transforms []EgressTransform `json:"transforms,omitempty"`
}

// EgressTransform sets or replaces headers on the sandbox's HTTPS
// requests to Host (a name or "*.domain"): hutch's egress proxy
// terminates TLS for that host only (with the daemon's CA, which the
// sandbox trusts) and writes each header, "{{secret.NAME}}" replaced by
// the owner's secret NAME; the placeholder SecretPlaceholder(NAME) in
// any header of such a request is replaced too.
type EgressTransform struct {
	Host    string            `json:"host"`
	Headers map[string]string `json:"headers"`
}

// Empty reports whether the policy restricts nothing.
func (p *EgressPolicy) Empty() bool {
	return p == nil || len(p.AllowOut)+len(p.DenyOut)+len(p.Transforms) == 0
}

// unmarshalNetwork reads a create request's "network": a boolean, or an
// egress policy object (which implies true).
func unmarshalNetwork(raw json.RawMessage) (bool, *EgressPolicy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil, nil
	}
	if raw[0] != '{' {
		var on bool
		if err := json.Unmarshal(raw, &on); err != nil {
			return false, nil, fmt.Errorf("network must be true, false or an object {allow_out, deny_out}")
		}
		return on, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p EgressPolicy
	if err := dec.Decode(&p); err != nil {
		return false, nil, fmt.Errorf("network: %w", err)
	}
	if p.Empty() {
		return true, nil, nil
	}
	return true, &p, nil
}

// PatchSchema says that "network" is a boolean or an egress policy.
func (*CreateRequest) PatchSchema(s *jsonschema.Schema) {
	policy, err := jsonschema.For[EgressPolicy](nil)
	if err != nil || s.Properties == nil {
		return
	}
	policy.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	s.Properties["network"] = &jsonschema.Schema{
		Description: "true for outbound networking, or an egress policy (which implies true)",
		AnyOf:       []*jsonschema.Schema{{Type: "boolean"}, policy},
	}
}

// NetworkCreateRequest is the payload of sandbox::network::create.
type NetworkCreateRequest struct {
	Name string `json:"name"`
}

// NetworkRequest names a network (sandbox::network::delete).
type NetworkRequest struct {
	Name string `json:"name"`
}

// NetworkListRequest is the payload of sandbox::network::list.
type NetworkListRequest struct{}

// NetworkMember is a sandbox on a network.
type NetworkMember struct {
	SandboxID string `json:"sandbox_id"`
	// Name is the sandbox's name: with its id, what its peers resolve.
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// NetworkInfo describes a network.
type NetworkInfo struct {
	Name      string          `json:"name"`
	CreatedAt string          `json:"created_at"`
	Members   []NetworkMember `json:"members"`
}

// NetworkListResponse is the result of sandbox::network::list.
type NetworkListResponse struct {
	Networks []NetworkInfo `json:"networks"`
}

// NetworkConnectRequest is the payload of sandbox::network::connect and
// disconnect.
type NetworkConnectRequest struct {
	Network   string `json:"network"`
	SandboxID string `json:"sandbox_id"`
}

// NetworkUpdateRequest is the payload of sandbox::network::update: the
// sandbox's new egress policy, in place of its old one (empty lists lift
// it).
type NetworkUpdateRequest struct {
	SandboxID string `json:"sandbox_id"`
	EgressPolicy
}

// SandboxNetwork is a sandbox's network: its address, policy, networks
// and how many packets its policy refused.
type SandboxNetwork struct {
	SandboxID string `json:"sandbox_id"`
	Address   string `json:"address"`
	EgressPolicy
	Networks     []string `json:"networks"`
	EgressDenied uint64   `json:"egress_denied"`
}

func (r *NetworkConnectRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *NetworkUpdateRequest) SandboxIDField() *string  { return &r.SandboxID }
