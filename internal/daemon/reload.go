package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// watchReloads reloads on SIGHUP until ctx ends, and, with tls, reloads
// the certificate when its files change.
func (d *daemon) watchReloads(ctx context.Context) {
	if d.certs != nil {
		go d.certs.watch(ctx)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				d.log.Info("SIGHUP: reloading")
				if _, err := d.reload(); err != nil {
					d.log.Error("reload", "err", err)
				}
			}
		}
	}()
}

// reload reads the TLS files again.
func (d *daemon) reload() ([]string, error) {
	if d.certs == nil {
		return nil, nil
	}
	if err := d.certs.reload(d.cfg.TLS); err != nil {
		return nil, err
	}
	return []string{"tls"}, nil
}
