package agentclient

import (
	"math"
	"testing"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// TestUnpackCountsFit: an agent's unpack counts must fit the stream sent.
func TestUnpackCountsFit(t *testing.T) {
	for _, tc := range []struct {
		e, b, s, sent int64
		ok            bool
	}{
		{0, 0, 0, 0, true},
		{1, 100, 0, 1024, true},                           // a header and a padded block of content
		{1, 0, 1, 10240, true},                            // an entry and a skipped device
		{3, 0, 0, 1024, false},                            // three headers need 1536 bytes
		{1, 1024, 0, 1024, false},                         // content and header cannot both fit
		{-1, 0, 0, 1024, false},                           // negative
		{0, -5, 0, 1024, false},                           // negative
		{math.MaxInt64, 0, math.MaxInt64, 1 << 40, false}, // would overflow
		{0, 0, 2, 1024, true},
	} {
		resp := &agentv1.FsUnpackResponse{Entries: tc.e, Bytes: tc.b, Skipped: tc.s}
		if got := unpackCountsFit(resp, tc.sent); got != tc.ok {
			t.Errorf("%+v of %d bytes: fit %v, want %v", resp, tc.sent, got, tc.ok)
		}
	}
}
