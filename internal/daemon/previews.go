package daemon

import (
	"context"
	"net"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/sandbox/portsvc"
)

// previewPorts serves the REST handler's preview routes from the port
// service.
type previewPorts struct{ ports *portsvc.Service }

func (p previewPorts) access(t portsvc.Target) httpapi.PortAccess {
	return httpapi.PortAccess{SandboxID: t.SandboxID, Port: t.Port, CORS: t.CORS, Host: t.Host,
		Dial: func(ctx context.Context) (net.Conn, error) { return p.ports.Dial(ctx, t) }}
}

func (p previewPorts) ReachPort(ctx context.Context, id string, port int) (httpapi.PortAccess, error) {
	t, err := p.ports.PortFor(ctx, id, port)
	if err != nil {
		return httpapi.PortAccess{}, err
	}
	return p.access(t), nil
}

func (p previewPorts) ReachPublic(_ context.Context, token string) (httpapi.PortAccess, error) {
	t, ok := p.ports.PublicPort(token)
	if !ok {
		return httpapi.PortAccess{}, errdefs.New(errdefs.CodeNotFound, "no public port with that token (it may have expired or been unexposed)")
	}
	return p.access(t), nil
}

// ReachGranted is any port of sandbox id, the caller's (issue 37).
func (p previewPorts) ReachGranted(ctx context.Context, id string, port int) (httpapi.PortAccess, error) {
	t, err := p.ports.AnyPort(ctx, id, port)
	if err != nil {
		return httpapi.PortAccess{}, err
	}
	return p.access(t), nil
}
