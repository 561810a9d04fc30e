package netsvc

// issue 35: a network that outlives its daemon with its sandbox (a
// cluster node's Pod) is taken over by the next one (Adopt). What the
// host does not say of it, the ports its gateway forwards and whether
// the private ranges are open to it, is kept beside its namespace.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// termsName is the file of a network's terms in its directory.
const termsName = "network.json"

// maxTerms bounds the terms read back.
const maxTerms = 64 << 10

// terms are what Adopt needs of a network beyond the host's links.
type terms struct {
	Ports       []uint16 `json:"ports,omitempty"`
	OpenPrivate bool     `json:"open_private,omitempty"`
}

// writeTerms keeps lease's terms in dir.
func writeTerms(dir string, lease *netplumb.Lease) error {
	b, err := json.Marshal(terms{Ports: lease.Ports, OpenPrivate: lease.OpenPrivate})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, termsName), b, 0o600)
	}
	if err != nil {
		return fmt.Errorf("writing the network's terms: %w", err)
	}
	return nil
}

// Adopt takes over sandbox id's network, which an earlier process of
// this service's directory attached and the sandbox still uses: its
// lease is found again and its firewall rules are written anew, with
// egress policy e. It returns its attachment and whether the private
// ranges are open to it. On error the network is left as it was, for
// Detach or Reconcile.
func (s *Service) Adopt(ctx context.Context, id string, e netplumb.Egress) (*runtime.NetworkAttachment, bool, error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	dir := s.sandboxDir(id)
	f, err := os.Open(filepath.Join(dir, termsName))
	if err != nil {
		return nil, false, fmt.Errorf("adopting the network of sandbox %s: %w", id, err)
	}
	var t terms
	err = json.NewDecoder(io.LimitReader(f, maxTerms)).Decode(&t)
	f.Close()
	if err != nil {
		return nil, false, fmt.Errorf("adopting the network of sandbox %s: reading its terms: %w", id, err)
	}
	lease, err := s.net.Adopt(ctx, netplumb.Sandbox{ID: id, NetnsPath: filepath.Join(dir, netnsName), Ports: t.Ports, Egress: e, OpenPrivate: t.OpenPrivate})
	if err != nil {
		return nil, false, fmt.Errorf("adopting the network of sandbox %s: %w", id, err)
	}
	return s.register(id, lease), t.OpenPrivate, nil
}
