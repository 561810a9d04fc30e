package image

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostSuite(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"debian", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n", "bookworm"},
		{"quoted", "VERSION_CODENAME=\"trixie\"\n", "trixie"},
		{"empty codename", "ID=debian\nVERSION_CODENAME=\n", fallbackSuite},
		{"no codename", "ID=alpine\n", fallbackSuite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "os-release")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := hostSuite(path); got != tt.want {
				t.Errorf("hostSuite = %q, want %q", got, tt.want)
			}
		})
	}
	if got := hostSuite(filepath.Join(t.TempDir(), "absent")); got != fallbackSuite {
		t.Errorf("hostSuite of a missing file = %q", got)
	}
}

func TestHostMirror(t *testing.T) {
	const debianSources = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
`
	tests := []struct {
		name  string
		files map[string]string // relative to the apt dir
		want  string
	}{
		{"none", nil, fallbackMirror},
		{"sources.list", map[string]string{
			"sources.list": "# comment\ndeb-src http://src.example/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n",
		}, "http://mirror.example/debian"},
		{"deb822", map[string]string{"sources.list.d/debian.sources": debianSources}, "http://deb.debian.org/debian"},
		{"third-party repositories first", map[string]string{
			"sources.list.d/a-nodesource.sources": "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n",
			"sources.list.d/b-google.list":        "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n",
			"sources.list.d/c-security.list":      "deb http://security.debian.org/debian-security bookworm-security main\n",
			"sources.list.d/d-debian.sources":     debianSources,
		}, "http://deb.debian.org/debian"},
		{"disabled stanza and non-http URIs", map[string]string{
			"sources.list.d/debian.sources": "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n" +
				"Types: deb\nURIs: cdrom:/media/ file:/srv/mirror\n  https://on.example/debian\nSuites: bookworm\n",
		}, "https://on.example/debian"},
		{"ignored file suffix", map[string]string{"sources.list.d/x.list.disabled": "deb http://off.example/debian bookworm main\n"}, fallbackMirror},
		{"sources.list before sources.list.d", map[string]string{
			"sources.list":                  "deb http://first.example/debian bookworm main\n",
			"sources.list.d/debian.sources": debianSources,
		}, "http://first.example/debian"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := hostMirror(dir, "bookworm"); got != tt.want {
				t.Errorf("hostMirror = %q, want %q", got, tt.want)
			}
		})
	}
}
