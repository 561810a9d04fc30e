package snapsvc

import (
	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// issue 46: restores into containers created ahead. A runtime that can
// create a sandbox's container before its restore is asked for
// (gvisor.Runtime) keeps a few per recently restored snapshot; a create
// from a snapshot takes one, whose id the sandbox gets (Origin.ID), and a
// deleted snapshot's are destroyed.

// Ahead is a runtime's containers created ahead for restores.
type Ahead interface {
	// ClaimAhead is the id of a container created ahead for a restore
	// from the checkpoint directory dir, taken for the caller; "" for
	// none. It marks dir as worth some for the next restores.
	ClaimAhead(dir string) string
	// DropAhead destroys dir's containers.
	DropAhead(dir string)
}

// aheadOf is the Ahead of the runtime named name ("" the default), nil
// when it has none.
func (s *Service) aheadOf(name string) Ahead {
	if s.ahead == nil {
		return nil
	}
	return s.ahead(name)
}

// claimAhead gives from, a restore of snapshot rec for req, the id of a
// container created ahead for it, if its runtime has one ready. A
// sandbox with a network or volumes has them made for it, so it gets
// none.
func (s *Service) claimAhead(rec *snapshotRecord, req *api.CreateRequest, from *sandbox.Origin) {
	if a := s.aheadOf(rec.Runtime); a != nil && !rec.Network && len(req.Volumes) == 0 {
		from.ID = a.ClaimAhead(s.path(rec.ID))
	}
}

// dropAhead destroys the containers created ahead for snapshot rec.
func (s *Service) dropAhead(rec *snapshotRecord) {
	if a := s.aheadOf(rec.Runtime); a != nil {
		a.DropAhead(s.path(rec.ID))
	}
}
