//go:build package

package deploy

// The package test takes minutes (mmdebstrap, two packages): it is built
// only with -tags package, by make test-package, which CI runs beside
// make test.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestPackage builds two versions of the package (packaging/build-deb.sh,
// over make build's binaries) and, in a fresh Debian root made with
// mmdebstrap (so the host is untouched), installs the first (the group,
// the data dir, the conffile), upgrades to the second keeping the data dir
// and a local edit of the config, removes it (the data dir and config
// stay) and purges it (nothing of hutch is left), with no systemd running
// (the maintainer scripts skip the unit). Then it boots the same root
// under systemd (testBooted) and does it again with the unit running
// sandboxes (see docs/operations.md, "The package test").
func TestPackage(t *testing.T) {
	testutil.RequiresIntegration(t)
	testutil.RequiresRoot(t)
	mmdebstrap := testutil.RequiresBinary(t, "mmdebstrap")
	testutil.RequiresBinary(t, "dpkg-deb")
	nspawn := testutil.RequiresBinary(t, "systemd-nspawn")
	repo := testutil.RepoRoot()
	bin := filepath.Join(repo, "bin")
	for _, b := range []string{"hutch", "hutch-agent", "runsc"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%v: run make build first (make test-package does)", err)
		}
	}
	work := t.TempDir()
	debs := map[string]string{}
	for _, v := range []string{"1.0.0", "1.0.1"} {
		debs[v] = filepath.Join(work, "hutch_"+v+"_amd64.deb")
		if out, err := exec.Command(filepath.Join(repo, "packaging", "build-deb.sh"), bin, v, debs[v]).CombinedOutput(); err != nil {
			t.Fatalf("build-deb.sh %s: %v\n%s", v, err, out)
		}
	}
	root := filepath.Join(work, "root")
	if out, err := exec.Command(mmdebstrap, "--variant=apt", "--include=nftables,iproute2,adduser,ca-certificates,systemd,systemd-sysv,dbus,procps",
		"bookworm", root).CombinedOutput(); err != nil {
		t.Fatalf("mmdebstrap: %v\n%s", err, out)
	}
	in := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("chroot", append([]string{root}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("chroot %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(root, p)); return err == nil }
	install := func(v string) {
		t.Helper()
		raw, err := os.ReadFile(debs[v])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "tmp", "hutch.deb"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		in("dpkg", "-i", "/tmp/hutch.deb")
	}

	install("1.0.0")
	if got := in("dpkg-query", "-W", "-f=${Version} ${Status}", "hutch"); got != "1.0.0 install ok installed" {
		t.Fatalf("after install: %q", got)
	}
	in("getent", "group", "hutch")
	if fi, err := os.Stat(filepath.Join(root, "var/lib/hutch")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir: %v %v, want mode 0700", fi, err)
	}
	for _, p := range []string{"usr/bin/hutch", "usr/bin/hutch-agent", "usr/bin/runsc", "lib/systemd/system/hutch.service",
		"etc/hutch/config.yaml", "usr/share/bash-completion/completions/hutch", "usr/share/man/man1/hutch-serve.1.gz"} {
		if !exists(p) {
			t.Errorf("the package did not install /%s", p)
		}
	}
	if out := in("/usr/bin/hutch", "--version"); !strings.Contains(out, "hutch version") {
		t.Errorf("hutch --version in the root: %q", out)
	}
	if got := in("dpkg-query", "-W", "-f=${Conffiles}", "hutch"); !strings.Contains(got, "/etc/hutch/config.yaml") {
		t.Errorf("conffiles: %q", got)
	}

	// State and a local edit, then the upgrade.
	cfg := filepath.Join(root, "etc/hutch/config.yaml")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("max_concurrent_sandboxes: 5 # local edit\n")
	f.Close()
	if err := os.WriteFile(filepath.Join(root, "var/lib/hutch/state-marker"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	install("1.0.1")
	if got := in("dpkg-query", "-W", "-f=${Version}", "hutch"); got != "1.0.1" {
		t.Errorf("after the upgrade: version %q", got)
	}
	if raw, _ := os.ReadFile(cfg); !strings.Contains(string(raw), "# local edit") {
		t.Error("the upgrade lost the local edit of /etc/hutch/config.yaml")
	}
	if !exists("var/lib/hutch/state-marker") {
		t.Error("the upgrade lost the data dir")
	}

	in("dpkg", "-r", "hutch")
	if exists("usr/bin/hutch") || exists("lib/systemd/system/hutch.service") {
		t.Error("remove left the binaries or the unit")
	}
	if !exists("var/lib/hutch/state-marker") || !exists("etc/hutch/config.yaml") {
		t.Error("remove took the data dir or the config")
	}
	in("dpkg", "-P", "hutch")
	for _, p := range []string{"var/lib/hutch", "etc/hutch", "usr/share/doc/hutch", "usr/share/man/man1/hutch.1.gz"} {
		if exists(p) {
			t.Errorf("purge left /%s", p)
		}
	}
	if out, err := exec.Command("chroot", root, "getent", "group", "hutch").CombinedOutput(); err == nil {
		t.Errorf("purge left the group hutch: %s", out)
	}
	testBooted(t, nspawn, root, debs)
}
