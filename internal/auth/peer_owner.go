package auth

import "context"

// issue 36: a call another node of the cluster forwarded (internal/
// clusterapi) acts for the owner that node authenticated; the cluster API
// sets it only on a call that carries the cluster's credential.

type peerOwnerKey struct{}

// WithPeerOwner returns a context whose request acts for owner, as the
// node that forwarded it found: Tokens.Owner answers owner without looking
// at the request's token.
func WithPeerOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, peerOwnerKey{}, owner)
}

// peerOwner is the owner WithPeerOwner set on ctx, if any.
func peerOwner(ctx context.Context) (string, bool) {
	o, ok := ctx.Value(peerOwnerKey{}).(string)
	return o, ok
}
