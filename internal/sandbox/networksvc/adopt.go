package networksvc

import (
	"context"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// Readopt takes over the network of sandbox id, which outlived the
// daemon that attached it and is being adopted (issue 35): its lease and
// firewall rules, with policy pol, and its place in hutch's resolver and
// egress proxy (its policy, and the egress defaults: the private ranges
// as it was made, the nameservers in force). Its learned addresses are
// learned again at its next lookups. On error Detach tears it down.
func (n *Net) Readopt(ctx context.Context, id string, pol *egress.Policy) error {
	fw, err := n.service()
	if err != nil {
		return err
	}
	_, open, err := fw.Adopt(ctx, id, n.firewall(pol))
	if err != nil {
		return errdefs.Wrap(errdefs.CodeBootFailed, err, "adopting the network of sandbox "+id)
	}
	d := n.current()
	d.OpenPrivate = open
	n.mu.Lock()
	n.policies[id], n.made[id] = pol, d
	n.mu.Unlock()
	return nil
}
