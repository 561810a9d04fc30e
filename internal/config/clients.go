package config

import (
	"fmt"
	"time"
)

// Bounds of the client keys: beyond them a value can only be a typo.
const (
	// MaxConnectionsLimit bounds max_connections.
	MaxConnectionsLimit = 1 << 16
	// MaxHTTPTimeoutSecs bounds the http_*_timeout_secs keys: one day.
	MaxHTTPTimeoutSecs = 24 * 3600
	// MinChannelBufferMB is the smallest channel buffer bound: a channel
	// of the default size (16 frames of 64 KiB) buffers 1 MiB, and one
	// frame a client writes may be 1 MiB.
	MinChannelBufferMB = 4
)

// validateClients checks the keys that bound what clients may hold.
func (c *Config) validateClients() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MaxConnections < 1 || c.MaxConnections > MaxConnectionsLimit {
		bad("max_connections must be between 1 and %d, got %d", MaxConnectionsLimit, c.MaxConnections)
	}
	for _, k := range []struct {
		name string
		v    uint64
	}{
		{"http_read_timeout_secs", c.HTTPReadTimeoutSecs},
		{"http_write_timeout_secs", c.HTTPWriteTimeoutSecs},
		{"http_idle_timeout_secs", c.HTTPIdleTimeoutSecs},
	} {
		if k.v < 1 || k.v > MaxHTTPTimeoutSecs {
			bad("%s must be between 1 and %d, got %d", k.name, MaxHTTPTimeoutSecs, k.v)
		}
	}
	if c.EngineSessionsPerOwner < 1 || c.EngineSessionsPerOwner > MaxConnectionsLimit {
		bad("engine_sessions_per_owner must be between 1 and %d, got %d", MaxConnectionsLimit, c.EngineSessionsPerOwner)
	}
	if c.ChannelBufferMB < MinChannelBufferMB || c.ChannelBufferMB > 1<<20 {
		bad("channel_buffer_mb must be between %d and %d, got %d", MinChannelBufferMB, 1<<20, c.ChannelBufferMB)
	}
	if c.ChannelBufferPerOwnerMB < MinChannelBufferMB || c.ChannelBufferPerOwnerMB > c.ChannelBufferMB {
		bad("channel_buffer_per_owner_mb must be between %d and channel_buffer_mb (%d), got %d", MinChannelBufferMB, c.ChannelBufferMB, c.ChannelBufferPerOwnerMB)
	}
	return errs
}

// HTTPTimeouts returns the read, write and idle timeouts of the HTTP keys.
func (c *Config) HTTPTimeouts() (read, write, idle time.Duration) {
	return secs(c.HTTPReadTimeoutSecs), secs(c.HTTPWriteTimeoutSecs), secs(c.HTTPIdleTimeoutSecs)
}

func secs(n uint64) time.Duration { return time.Duration(n) * time.Second }
