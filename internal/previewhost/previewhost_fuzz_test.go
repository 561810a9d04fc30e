package previewhost

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/webguard"
)

// FuzzParse reads hostile Host headers and checks: what Parse accepts is
// under the domain and is exactly the Name of what it returned (so two
// spellings never reach one sandbox's port unnoticed), and Name's hosts
// parse back to their port and id (a round trip).
func FuzzParse(f *testing.F) {
	for _, h := range []string{"8080-0b4c1f8a-9a4e-4b8e-8f50-8f2d3a1c9e77.preview.example.com",
		"8080-ID.PREVIEW.EXAMPLE.COM.:443", "[::1]:80", "0-x.preview.example.com", "08080-x.preview.example.com",
		"65536-x.preview.example.com", "1-a.b.preview.example.com", "-1-x.preview.example.com", "preview.example.com"} {
		f.Add(h, "preview.example.com", 3000, "sb-1")
	}
	f.Fuzz(func(t *testing.T, hostport, domain string, port int, id string) {
		if CheckDomain(domain) != nil {
			return
		}
		if p, got, err := Parse(hostport, domain); err == nil {
			if !Under(hostport, domain) {
				t.Errorf("Parse accepted %q, which is not under %q", hostport, domain)
			}
			if name := Name(domain, p, got); name != webguard.HostName(hostport) {
				t.Errorf("Parse(%q) = %d, %q, whose name is %q", hostport, p, got, name)
			}
		}
		if port < 1 || port > 65535 || id == "" || strings.ContainsAny(id, ".:[]") || strings.ToLower(id) != id || len(id) > 36 {
			return
		}
		p, got, err := Parse(Name(domain, port, id), domain)
		if err != nil || p != port || got != id {
			t.Errorf("Parse(Name(%q, %d, %q)) = %d, %q, %v", domain, port, id, p, got, err)
		}
	})
}
