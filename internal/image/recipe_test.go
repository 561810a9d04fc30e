package image

import (
	"slices"
	"strings"
	"testing"
)

func TestRecipeIDStable(t *testing.T) {
	a := presetRecipe("bookworm", []string{"nodejs", "ca-certificates"})
	b := presetRecipe("bookworm", []string{"ca-certificates", "nodejs"})
	if a.id() != b.id() {
		t.Error("the order packages are listed in changes the id")
	}
	if id := a.id(); len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Errorf("id %q is not 64 hex digits", id)
	}
	if again := presetRecipe("bookworm", []string{"nodejs", "ca-certificates"}); again.id() != a.id() {
		t.Error("the same recipe built twice has two ids")
	}
}

func TestRecipeIDSensitive(t *testing.T) {
	base := presetRecipe("bookworm", []string{"python3"})
	tests := []struct {
		name   string
		change func(r *recipe)
	}{
		{"builder version", func(r *recipe) { r.Builder += "+1" }},
		{"architecture", func(r *recipe) { r.Arch = "riscv64" }},
		{"suite", func(r *recipe) { r.Suite = "trixie" }},
		{"variant", func(r *recipe) { r.Variant = "buildd" }},
		{"packages", func(r *recipe) { r.Packages = append(r.Packages, "python3-pip") }},
		{"hook dirs", func(r *recipe) { r.HookDirs = nil }},
		{"dpkg options", func(r *recipe) { r.DpkgOpts = r.DpkgOpts[1:] }},
		{"env", func(r *recipe) { r.Config.Env = append(r.Config.Env, "TZ=UTC") }},
		{"working dir", func(r *recipe) { r.Config.WorkingDir = "/root" }},
		{"user", func(r *recipe) { r.Config.User = "nobody" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := presetRecipe("bookworm", []string{"python3"})
			tt.change(&r)
			if r.id() == base.id() {
				t.Errorf("changing the %s keeps the id", tt.name)
			}
		})
	}
}

func TestIDIgnoresMirror(t *testing.T) {
	ids := map[string]bool{}
	for _, mirror := range []string{"http://deb.debian.org/debian", "https://mirror.example/debian"} {
		s, err := NewStore(Options{CacheDir: t.TempDir(), Suite: "bookworm", Mirror: mirror})
		if err != nil {
			t.Fatal(err)
		}
		ids[s.presets["python"].id] = true
	}
	if len(ids) != 1 {
		t.Errorf("the mirror changes the id: %v", ids)
	}
}

func TestPresetRecipes(t *testing.T) {
	s := newTestStore(t, t.TempDir(), fakeRootfs)
	tests := []struct {
		name, ref string
		packages  []string
	}{
		{"python", "debian:bookworm+ca-certificates+git+python-is-python3+python3", []string{"ca-certificates", "git", "python-is-python3", "python3"}},
		{"node", "debian:bookworm+ca-certificates+git+nodejs+npm", []string{"ca-certificates", "git", "nodejs", "npm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := s.presets[tt.name]
			if p.ref != tt.ref || !slices.Equal(p.recipe.Packages, tt.packages) || p.recipe.Variant != "minbase" {
				t.Errorf("preset = %+v", p)
			}
		})
	}
	if s.presets["python"].id == s.presets["node"].id {
		t.Error("python and node share an id")
	}
}

func TestMmdebstrapArgs(t *testing.T) {
	r := presetRecipe("bookworm", []string{"nodejs", "ca-certificates"})
	args := r.mmdebstrapArgs("/cache/tmp/x/rootfs", "http://deb.debian.org/debian")
	for _, want := range []string{
		"--mode=root", "--format=directory", "--variant=minbase",
		"--include=ca-certificates,nodejs",
		"--hook-dir=" + mergedUsrHooks,
		"--dpkgopt=path-exclude=/usr/share/doc/*",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %q: %q", want, args)
		}
	}
	if tail := args[len(args)-3:]; !slices.Equal(tail, []string{"bookworm", "/cache/tmp/x/rootfs", "http://deb.debian.org/debian"}) {
		t.Errorf("positional args = %q", tail)
	}
}
