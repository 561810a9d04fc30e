package gvisor

import (
	"bytes"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// systemBundle is where Debian-like images keep their trusted CAs, which
// OpenSSL, Python, curl and git read.
const systemBundle = "etc/ssl/certs/ca-certificates.crt"

// withEgressCA makes the sandbox of bundle dir trust hutch's egress CA
// (issue 37): its image's CA bundle, with the CA appended, mounted
// read-only over the image's. An image without a regular bundle there, or
// a CA that cannot be read, changes nothing (such a sandbox's TLS to the
// hosts of transforms fails rather than trusting anything else).
func withEgressCA(s *specs.Spec, nw *runtime.NetworkAttachment, dir string) {
	if nw == nil || nw.CACert == "" {
		return
	}
	image := filepath.Join(dir, "rootfs", systemBundle)
	if fi, err := os.Lstat(image); err != nil || !fi.Mode().IsRegular() {
		return
	}
	base, err := os.ReadFile(image)
	if err != nil {
		return
	}
	ca, err := os.ReadFile(nw.CACert)
	if err != nil || !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return
	}
	bundle := filepath.Join(dir, "egress-ca-bundle.pem")
	if err := os.WriteFile(bundle, append(append(bytes.TrimRight(base, "\n"), '\n'), ca...), 0o644); err != nil {
		return
	}
	s.Mounts = append(s.Mounts, specs.Mount{
		Destination: "/" + systemBundle,
		Type:        "bind",
		Source:      bundle,
		Options:     []string{"bind", "ro", "nosuid", "nodev", "noexec"},
	})
}
