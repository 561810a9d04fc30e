package networksvc

import (
	"fmt"
	"slices"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/egressproxy"
)

// Defaults are the egress defaults a sandbox's network is made with
// (issue 41: 4): taken from the daemon's config when Attach makes the
// network and kept with it, in the firewall (netplumb's private_open set),
// the egress proxy's record of the sandbox and its resolver's upstreams,
// for as long as the sandbox lives, a hibernation and its wake included.
// A config reload (SetDefaults) changes them for the sandboxes whose
// first network is made after it.
type Defaults struct {
	// OpenPrivate is block_private_networks off: the private and
	// cloud-internal ranges are open to the sandbox.
	OpenPrivate bool
	// Nameservers are sandbox_nameservers as host:port, the upstreams of
	// the sandbox's resolver; none means the host's.
	Nameservers []string
}

// DefaultsOf are cfg's egress defaults (sandbox_nameservers checked by
// config.Validate).
func DefaultsOf(cfg config.Config) Defaults {
	d := Defaults{OpenPrivate: !cfg.BlockPrivateNetworks}
	for _, ns := range cfg.SandboxNameservers {
		if ap, err := config.ParseNameserver(ns); err == nil {
			d.Nameservers = append(d.Nameservers, ap.String())
		}
	}
	return d
}

func (d Defaults) equal(o Defaults) bool {
	return d.OpenPrivate == o.OpenPrivate && slices.Equal(d.Nameservers, o.Nameservers)
}

// SetDefaults makes cfg's egress defaults those of the networks made from
// now on; the networks made before keep theirs.
func (n *Net) SetDefaults(cfg config.Config) {
	d := DefaultsOf(cfg)
	n.defaults.Store(&d)
}

// current are the egress defaults a network made now gets.
func (n *Net) current() Defaults { return *n.defaults.Load() }

// defaultsFor are the egress defaults sandbox id's network is made with:
// those its network had before, when it wakes from a hibernation (Detach
// keeps them while the core lists the sandbox), else those in force.
func (n *Net) defaultsFor(id string) Defaults {
	n.mu.Lock()
	d, kept := n.made[id]
	n.mu.Unlock()
	if kept {
		return d
	}
	return n.current()
}

// Forget drops the egress defaults sandbox id's network was made with:
// the core calls it as the sandbox stops (sandbox.Manager.OnStop), and
// Detach for a sandbox the core does not list (a failed create, a
// discarded pool sandbox).
func (n *Net) Forget(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.made, id)
}

// listed reports whether the core lists sandbox id and it has not
// stopped.
func (n *Net) listed(id string) bool {
	core := n.core.Load()
	if core == nil {
		return false
	}
	_, ok := (*core).Running(id)
	return ok
}

// madeWith are the egress defaults sandbox id's network was made with;
// the zero Defaults (private ranges closed, the host's nameservers)
// without a network.
func (n *Net) madeWith(id string) Defaults {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.made[id]
}

// stale refuses a claim from the warm pool of a sandbox whose network was
// made with defaults a reload has since changed: the pool discards it and
// the create boots its own. A listed sandbox's policy changes are never
// refused for it.
func (n *Net) stale(id string) error {
	if n.listed(id) {
		return nil
	}
	n.mu.Lock()
	made, ok := n.made[id]
	n.mu.Unlock()
	if ok && !made.equal(n.current()) {
		return fmt.Errorf("sandbox %s's network was made before block_private_networks or sandbox_nameservers changed", id)
	}
	return nil
}

// WithDefaults is sb with the egress defaults in force: hutch's own
// connections for a template build's ADD of a URL (egressproxy.Proxy.Dial)
// are decided as those of a sandbox made now.
func (n *Net) WithDefaults(sb egressproxy.Sandbox) egressproxy.Sandbox {
	d := n.current()
	sb.OpenPrivate, sb.Nameservers = d.OpenPrivate, d.Nameservers
	return sb
}
