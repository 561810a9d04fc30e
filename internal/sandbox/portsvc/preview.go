package portsvc

// A sandbox's preview terms (api.PreviewOptions, issue 37): the Host
// header its servers see, and whether its ports may be public. They are
// kept with its exposed ports, in memory (no sandbox with them outlives
// the daemon), through a pause or hibernation, and go as it stops.

import (
	"context"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// CheckPreview explains what is wrong with o (S001).
func (s *Service) CheckPreview(o api.PreviewOptions) error {
	if o.HostHeader == "" {
		return nil
	}
	if err := previewhost.CheckHostHeader(o.HostHeader); err != nil {
		return errdefs.Malformed("preview.host_header: %v", err)
	}
	return nil
}

// SetPreview gives sandbox id, the caller's, the preview terms o.
func (s *Service) SetPreview(ctx context.Context, id string, o api.PreviewOptions) error {
	if err := s.CheckPreview(o); err != nil {
		return err
	}
	id, err := s.lookup(ctx, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bookOf(ctx, id).preview = o
	return nil
}

// bookOf is the book of sandbox id, the caller's, made if it has none;
// s.mu is held.
func (s *Service) bookOf(ctx context.Context, id string) *book {
	b := s.books[id]
	if b == nil {
		b = &book{owner: auth.OwnerFrom(ctx), byPort: map[int]*exposedPort{}}
		s.books[id] = b
	}
	return b
}

// Private reports whether sandbox id's ports are private: reached only
// with the owner's token or a grant.
func (s *Service) Private(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.private(id)
}

// private is Private with s.mu held.
func (s *Service) private(id string) bool {
	b := s.books[id]
	return b != nil && b.preview.Private
}

// AnyPort is port of sandbox id, the caller's, exposed or not: for a
// request a grant admitted (previewhost.WithGrant).
func (s *Service) AnyPort(ctx context.Context, id string, port int) (Target, error) {
	id, err := s.lookup(ctx, id)
	if err != nil {
		return Target{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.books[id]
	if b == nil {
		b = &book{}
	}
	p, ok := b.byPort[port]
	if !ok {
		p = &exposedPort{port: port}
	}
	t := s.target(id, b, p)
	t.owner = auth.OwnerFrom(ctx)
	return t, nil
}

// target is where a request to p, a port of b, sandbox id's, goes;
// s.mu is held.
func (s *Service) target(id string, b *book, p *exposedPort) Target {
	t := Target{SandboxID: id, Port: p.port, CORS: p.cors, owner: b.owner}
	if b.preview.HostHeader != "" {
		t.Host = previewhost.ExpandHostHeader(b.preview.HostHeader, p.port)
	}
	return t
}

// Preview is the preview terms of sandbox id, which the caller was
// admitted to; the zero terms for one that has none.
func (s *Service) Preview(id string) api.PreviewOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.books[id]; b != nil {
		return b.preview
	}
	return api.PreviewOptions{}
}
