package daemon

import (
	"slices"
	"testing"
)

func TestListenPorts(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		want  []uint16
	}{
		{[]string{"127.0.0.1:3111", "127.0.0.1:49134"}, []uint16{3111, 49134}},
		{[]string{"[::1]:8080", ":9000"}, []uint16{8080, 9000}},
		{[]string{"", "127.0.0.1:0", "nonsense", "host:http"}, nil},
	} {
		if got := listenPorts(tc.addrs...); !slices.Equal(got, tc.want) {
			t.Errorf("listenPorts(%q) = %v, want %v", tc.addrs, got, tc.want)
		}
	}
}
