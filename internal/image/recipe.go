package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
)

// builderVersion names the build procedure outside the recipe's own fields
// (the mmdebstrap invocation, the steps after it). Bump it when that changes
// so every preset is rebuilt.
const builderVersion = "1"

// presetPackages lists each preset's Debian packages on top of minbase, in
// catalog order.
var presetPackages = []struct {
	name     string
	packages []string
	// customize are shell commands run on the built tree ("$1"), and
	// config the image configuration when not defaultConfig's.
	customize []string
	config    *Config
}{
	// ca-certificates (~3 MB with openssl): without it Python's ssl module
	// and Debian's nodejs trust no CA, so every HTTPS request fails.
	// python-is-python3 (16 KB) provides `python`, which callers expect
	// (seed 001 runs `python --version`). git (with the perl it needs,
	// about 80 MB) serves sandbox::git::* in every preset; its ssh client
	// is not included (a Recommends), so remotes are http(s), git or local.
	{"python", []string{"python3", "python-is-python3", "ca-certificates", "git"}, nil, nil},
	// npm installs packages (sandbox::interpreter::install).
	{"node", []string{"nodejs", "npm", "ca-certificates", "git"}, nil, nil},
	// For data work with the interpreter: numpy, pandas and matplotlib
	// (the Agg backend needs no display; the kernel sets MPLBACKEND).
	{"python-data", []string{"python3", "python-is-python3", "ca-certificates", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pip", "git"}, nil, nil},
	// issue 43: E2B's `base` template as E2B ships it: commands run as
	// `user` (uid 1000, home /home/user, passwordless sudo), with curl,
	// git and pip, which installs into the user's site (Debian's
	// "externally managed" marker removed, as E2B's image has none).
	// issue 37: python3-requests, the HTTP client the egress tests run.
	{E2BBase, []string{"python3", "python-is-python3", "python3-pip", "python3-requests", "ca-certificates", "git", "curl", "sudo"}, []string{
		`chroot "$1" useradd --create-home --uid 1000 --user-group --shell /bin/bash user`,
		`echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' > "$1/etc/sudoers.d/user" && chmod 0440 "$1/etc/sudoers.d/user"`,
		`rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED`,
	}, &Config{
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/home/user"},
		WorkingDir: "/home/user",
		User:       "user",
	}},
}

// E2BBase is the preset behind E2B's `base` template (e2b.templates).
const E2BBase = "e2b-base"

// mergedUsrHooks is mmdebstrap's hook directory that sets up merged /usr
// with symlinks. Without it, apt satisfies init-system-helpers' dependency
// on "usrmerge | usr-is-merged" with usrmerge, which pulls in perl (~50 MB).
const mergedUsrHooks = "/usr/share/mmdebstrap/hooks/merged-usr"

// slimDpkgOpts keep documentation and translations out of presets (about
// 50 MB of python's 224 MB). They are written into the image's dpkg
// configuration, so packages installed later in a sandbox skip them too.
var slimDpkgOpts = []string{
	"path-exclude=/usr/share/doc/*",
	"path-include=/usr/share/doc/*/copyright",
	"path-exclude=/usr/share/man/*",
	"path-exclude=/usr/share/info/*",
	"path-exclude=/usr/share/groff/*",
	"path-exclude=/usr/share/lintian/*",
	"path-exclude=/usr/share/locale/*",
	"path-include=/usr/share/locale/locale.alias",
}

// defaultConfig is the image configuration of every preset.
func defaultConfig() Config {
	return Config{
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"LANG=C.UTF-8",
			"HOME=/root",
		},
		WorkingDir: "/",
	}
}

// recipe is everything that decides a preset's content; its hash is the
// preset's ID. The mirror is deliberately absent: any mirror of the suite
// gives the same image.
type recipe struct {
	Builder  string   `json:"builder"`
	Arch     string   `json:"arch"`
	Suite    string   `json:"suite"`
	Variant  string   `json:"variant"`
	Packages []string `json:"packages"`
	HookDirs []string `json:"hook_dirs"`
	DpkgOpts []string `json:"dpkg_opts"`
	Config   Config   `json:"config"`
	// Customize are mmdebstrap customize hooks (absent from the JSON,
	// and so from the ID, of a recipe without).
	Customize []string `json:"customize,omitempty"`
}

// presetRecipe returns the recipe of a preset with the given packages.
func presetRecipe(suite string, packages []string) recipe {
	pkgs := slices.Clone(packages)
	slices.Sort(pkgs)
	return recipe{
		Builder:  builderVersion,
		Arch:     runtime.GOARCH,
		Suite:    suite,
		Variant:  "minbase",
		Packages: pkgs,
		HookDirs: []string{mergedUsrHooks},
		DpkgOpts: slices.Clone(slimDpkgOpts),
		Config:   defaultConfig(),
	}
}

// id is the hex SHA-256 of the recipe's JSON form.
func (r recipe) id() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic("image: encoding recipe: " + err.Error()) // strings and slices always encode
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ref is the recipe in short, e.g. "debian:bookworm+ca-certificates+nodejs".
func (r recipe) ref() string {
	return "debian:" + r.Suite + "+" + strings.Join(r.Packages, "+")
}

// mmdebstrapArgs is the argv (without the program) that builds r into the
// directory dst, which must not exist, from mirror.
func (r recipe) mmdebstrapArgs(dst, mirror string) []string {
	args := []string{
		"--mode=root",
		"--format=directory",
		"--variant=" + r.Variant,
		"--include=" + strings.Join(r.Packages, ","),
	}
	for _, h := range r.HookDirs {
		args = append(args, "--hook-dir="+h)
	}
	for _, o := range r.DpkgOpts {
		args = append(args, "--dpkgopt="+o)
	}
	for _, c := range r.Customize {
		args = append(args, "--customize-hook="+c)
	}
	return append(args, r.Suite, dst, mirror)
}
