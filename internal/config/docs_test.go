package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
	_ "github.com/hutch-dev/hutch/internal/runtime/runtimes"
)

// configDoc is the user's reference of every key of the config file.
const configDoc = "../../docs/configuration.md"

// yamlKeys lists the keys of the config file that t, a struct type, reads,
// each under prefix: a nested block's keys as block.key, the keys of the
// entries of a list of blocks as list[].key, and those of the values of a
// map of blocks as map.*.key. Blocks decoded by hand (Runtimes) have no
// yaml tags of their own and are walked by their caller.
func yamlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		key := prefix + name
		keys = append(keys, key)
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(ft, key+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(ft.Elem(), key+"[].")...)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(ft.Elem(), key+".*.")...)
		}
	}
	return keys
}

// configKeys lists every key of the config file: Config's, with the
// blocks of the runtimes linked into hutch (runtimes.<name>.<key>), which
// each backend declares in its own package (runtime.Registration.Settings).
func configKeys(t *testing.T) []string {
	t.Helper()
	keys := yamlKeys(reflect.TypeFor[Config](), "")
	names := runtime.NamesWithSettings()
	if len(names) == 0 {
		t.Fatal("no runtime registers a block of settings: internal/runtime/runtimes is not linked in")
	}
	for _, name := range names {
		s, _ := runtime.NewSettings(name)
		st := reflect.TypeOf(s).Elem()
		if st.PkgPath() == reflect.TypeFor[Config]().PkgPath() {
			continue // a block this package's own tests register
		}
		keys = append(keys, yamlKeys(st, runtime.SettingsKey(name)+".")...)
	}
	return keys
}

// TestEveryConfigKeyDocumented: each key of the config file, nested blocks
// and runtime blocks included, appears as `key` in docs/configuration.md,
// so a key added to the struct without its documentation fails here.
func TestEveryConfigKeyDocumented(t *testing.T) {
	raw, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	keys := configKeys(t)
	for _, want := range []string{"auto_install", "e2b.api_keys", "webhooks[].secret", "per_image_caps.*.max_cpus", "runtimes.gvisor.platform", "runtimes.microvm.accel"} {
		if !slices.Contains(keys, want) {
			t.Errorf("the walk of the config's keys misses %q: %v", want, keys)
		}
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("config key %s is not documented in docs/configuration.md (as `%s`)", k, k)
		}
	}
	// The other way: each key a row of the table documents is a key of
	// the config, so a key renamed or removed leaves no stale row.
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			if !slices.Contains(keys, m[1]) {
				t.Errorf("docs/configuration.md documents %q, which is not a config key", m[1])
			}
		}
	}
}

// backticked finds `code` spans.
var backticked = regexp.MustCompile("`([^`]+)`")
