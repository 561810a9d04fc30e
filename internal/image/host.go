package image

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Host files the defaults are read from; variables so tests can point
// them elsewhere.
var (
	hostOSRelease = "/etc/os-release"
	hostAptDir    = "/etc/apt"
)

const (
	fallbackSuite  = "bookworm"
	fallbackMirror = "http://deb.debian.org/debian"
)

// hostSuite returns VERSION_CODENAME from the os-release file at path, or
// fallbackSuite.
func hostSuite(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fallbackSuite
	}
	for line := range strings.Lines(string(b)) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "VERSION_CODENAME=")
		if v = strings.Trim(v, `"'`); ok && v != "" {
			return v
		}
	}
	return fallbackSuite
}

// aptSource is one "deb" source of the host's apt configuration.
type aptSource struct {
	uris   []string
	suites []string
}

// hostMirror returns the first http(s) URI of a deb source serving suite
// in the apt configuration directory aptDir (sources.list, then
// sources.list.d/*.list and *.sources in name order), or fallbackMirror.
// Sources of other suites (security, updates, third-party repositories)
// are skipped: they cannot bootstrap suite.
func hostMirror(aptDir, suite string) string {
	files := []string{filepath.Join(aptDir, "sources.list")}
	if entries, err := os.ReadDir(filepath.Join(aptDir, "sources.list.d")); err == nil {
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".list") || strings.HasSuffix(n, ".sources") {
				files = append(files, filepath.Join(aptDir, "sources.list.d", n))
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		parse := parseOneLineSources
		if strings.HasSuffix(f, ".sources") {
			parse = parseDeb822Sources
		}
		for _, src := range parse(string(b)) {
			if !slices.Contains(src.suites, suite) {
				continue
			}
			for _, u := range src.uris {
				if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
					return u
				}
			}
		}
	}
	return fallbackMirror
}

// parseOneLineSources parses the one-line format of sources.list:
// "deb [opt=val ...] URI SUITE [COMPONENT...]".
func parseOneLineSources(text string) []aptSource {
	var out []aptSource
	for line := range strings.Lines(text) {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			end := slices.IndexFunc(f, func(s string) bool { return strings.HasSuffix(s, "]") })
			if end < 0 {
				continue
			}
			f = f[end+1:]
		}
		if len(f) >= 2 {
			out = append(out, aptSource{uris: f[:1], suites: f[1:2]})
		}
	}
	return out
}

// parseDeb822Sources parses the deb822 format of *.sources files: stanzas
// of "Key: value" fields separated by blank lines.
func parseDeb822Sources(text string) []aptSource {
	var out []aptSource
	fields := map[string]string{}
	last := ""
	flush := func() {
		types := strings.Fields(fields["types"])
		if slices.Contains(types, "deb") && !strings.EqualFold(fields["enabled"], "no") {
			out = append(out, aptSource{uris: strings.Fields(fields["uris"]), suites: strings.Fields(fields["suites"])})
		}
		fields, last = map[string]string{}, ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}
