package previewhost

import (
	"strings"
	"testing"
)

const id = "5b0e3c1a-7d2f-4c1e-9a7b-2f6d8e4c1a00"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		host    string
		under   bool
		port    int
		wantErr bool
	}{
		{host: Name("preview.example.com", 8000, id), under: true, port: 8000},
		{host: "8000-" + strings.ToUpper(id) + ".Preview.Example.COM:3111", under: true, port: 8000},
		{host: "1-" + id + ".preview.example.com.", under: true, port: 1},
		{host: "65535-" + id + ".preview.example.com", under: true, port: 65535},
		{host: "preview.example.com", under: false, wantErr: true},
		{host: "preview.example.com:3111", under: false, wantErr: true},
		{host: "example.com", under: false, wantErr: true},
		{host: "8000-" + id + ".other.example", under: false, wantErr: true},
		{host: "8000-" + id + ".xpreview.example.com", under: false, wantErr: true},
		{host: "www.preview.example.com", under: true, wantErr: true},
		{host: "8000.preview.example.com", under: true, wantErr: true},
		{host: "8000-.preview.example.com", under: true, wantErr: true},
		{host: "-" + id + ".preview.example.com", under: true, wantErr: true},
		{host: "0-" + id + ".preview.example.com", under: true, wantErr: true},
		{host: "65536-" + id + ".preview.example.com", under: true, wantErr: true},
		{host: "08000-" + id + ".preview.example.com", under: true, wantErr: true},
		{host: "+8000-" + id + ".preview.example.com", under: true, wantErr: true},
		{host: "8000-" + id + ".a.preview.example.com", under: true, wantErr: true},
	} {
		if got := Under(tc.host, "preview.example.com"); got != tc.under {
			t.Errorf("Under(%q) = %v, want %v", tc.host, got, tc.under)
		}
		port, gotID, err := Parse(tc.host, "preview.example.com")
		switch {
		case tc.wantErr && err == nil:
			t.Errorf("Parse(%q) = %d %q, want an error", tc.host, port, gotID)
		case !tc.wantErr && (err != nil || port != tc.port || gotID != id):
			t.Errorf("Parse(%q) = %d %q %v, want %d %s", tc.host, port, gotID, err, tc.port, id)
		}
	}
	if Under(Name("localhost", 8000, id), "") {
		t.Error("a host is under the empty domain")
	}
}

func TestCheckDomain(t *testing.T) {
	for domain, want := range map[string]string{
		"preview.example.com": "", "localhost": "",
		"Preview.example.com":                    "not a DNS name",
		"http://preview.example.com":             "not a DNS name",
		"preview.example.com:8080":               "not a DNS name",
		"*.preview.example.com":                  "not a DNS name",
		"10.0.0.1":                               "not a DNS name",
		strings.Repeat("abcdefghi.", 22) + "com": "too long",
	} {
		err := CheckDomain(domain)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckDomain(%q) = %v, want %q", domain, err, want)
		}
	}
}
