package auth

import "context"

type ownerKey struct{}

// WithOwner returns a context whose requests act for owner. Transports set
// it from the caller's credentials; "" is the anonymous owner.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner a context acts for.
func OwnerFrom(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}
