package agenterr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestSpawnRefused(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"fork refused", fmt.Errorf("exec: %w", status.Error(codes.ResourceExhausted, "starting echo: resource temporarily unavailable")), true},
		{"agent broke", fmt.Errorf("exec: %w", status.Error(codes.Unavailable, "transport closing")), false},
		{"bad request", status.Error(codes.InvalidArgument, "argv is empty"), false},
		{"not grpc", errors.New("closed"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := SpawnRefused("id", tt.err)
			if (err != nil) != tt.want {
				t.Fatalf("SpawnRefused(%v) = %v", tt.err, err)
			}
			if tt.want && (!errdefs.Is(err, errdefs.CodeCapacity) || !strings.Contains(err.Error(), "resource temporarily unavailable")) {
				t.Errorf("got %v, want S400 with the agent's reason", err)
			}
		})
	}
}
