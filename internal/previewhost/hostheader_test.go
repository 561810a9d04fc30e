package previewhost

import "testing"

func TestHostHeader(t *testing.T) {
	for _, good := range []string{"custom-host.example.com:${PORT}", "app.example.com", "${PORT}.app.test", "10.0.0.1:8080", "[::1]:${PORT}", "App.Example.com"} {
		if err := CheckHostHeader(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "a b", "x.test:0", "x.test:99999", "http://x.test", "x.test/path", "x.test\r\nEvil: 1", "*.x.test", "x.test:${PORT}${PORT}"} {
		if err := CheckHostHeader(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := ExpandHostHeader("h.test:${PORT}", 8080); got != "h.test:8080" {
		t.Errorf("expand: %q", got)
	}
}
