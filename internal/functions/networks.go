package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Networks runs sandbox networks and egress policies (internal/sandbox/networksvc).
type Networks interface {
	CreateNetwork(ctx context.Context, req api.NetworkCreateRequest) (api.NetworkInfo, error)
	ListNetworks(ctx context.Context, req api.NetworkListRequest) (api.NetworkListResponse, error)
	DeleteNetwork(ctx context.Context, req api.NetworkRequest) (api.NetworkInfo, error)
	ConnectNetwork(ctx context.Context, req api.NetworkConnectRequest) (api.NetworkInfo, error)
	DisconnectNetwork(ctx context.Context, req api.NetworkConnectRequest) (api.NetworkInfo, error)
	UpdateNetwork(ctx context.Context, req api.NetworkUpdateRequest) (api.SandboxNetwork, error)
}

// registerNetworks adds sandbox::network::*, when the table has Networks.
func registerNetworks(t *Table) {
	n := t.deps.Networks
	if n == nil {
		return
	}
	add(t, api.FnNetworkCreate, "Create a sandbox network: sandboxes on it reach each other by address, name or id", n.CreateNetwork)
	add(t, api.FnNetworkList, "List your sandbox networks and their members", n.ListNetworks)
	add(t, api.FnNetworkDelete, "Delete a sandbox network that has no members", n.DeleteNetwork)
	add(t, api.FnNetworkConnect, "Put a running sandbox created with network: true on a network", n.ConnectNetwork)
	add(t, api.FnNetworkDisconnect, "Take a sandbox off a network", n.DisconnectNetwork)
	add(t, api.FnNetworkUpdate, "Replace a running sandbox's egress policy (allow_out, deny_out; empty lists lift it)", n.UpdateNetwork)
}
