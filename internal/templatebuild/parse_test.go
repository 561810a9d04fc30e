package templatebuild

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestParseStages(t *testing.T) {
	p, err := Parse([]byte("ARG BASE=python\nFROM ${BASE} AS build\nRUN echo hi > /x\n\nFROM python\nCOPY --from=build /x /y\nCMD [\"python\", \"-m\", \"http.server\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Stages) != 2 || p.Stages[0].Name != "build" || p.Stages[0].From != "${BASE}" || len(p.MetaArgs) != 1 {
		t.Fatalf("stages %+v meta %+v", p.Stages, p.MetaArgs)
	}
	if got := p.Stages[1].Steps[0]; got.Line != 6 {
		t.Errorf("COPY --from at line %d, want 6", got.Line)
	}
	if c, ok := p.Stages[1].Steps[0].Cmd.(*instructions.CopyCommand); !ok || c.From != "build" {
		t.Errorf("step %#v", p.Stages[1].Steps[0].Cmd)
	}
}

func TestParseRefusesWithLine(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"FROM python\nRUN true\nHEALTHCHECK CMD true\n", "line 3: HEALTHCHECK"},
		{"FROM python\nONBUILD RUN true\n", "line 2: ONBUILD"},
		{"FROM python\nSHELL [\"/bin/bash\", \"-c\"]\n", "line 2: SHELL"},
		{"FROM python\n\nRUN --mount=type=cache,target=/c true\n", "line 3: RUN --mount"},
		{"FROM python\nADD https://github.com/o/r.git?submodules=1 /x\n", "line 2: ADD https://github.com/o/r.git?submodules=1: submodules are not fetched"},
		{"FROM python\nADD https://github.com/o/r.git?nope=1 /x\n", "line 2: ADD https://github.com/o/r.git?nope=1: unexpected query"},
		{"FROM python\nADD --keep-git-dir ./x /x\n", "line 2: ADD --keep-git-dir takes a git repository"},
		{"FROM python\nADD --checksum=sha256:00 https://github.com/o/r.git /x\n", "line 2: ADD --checksum=sha256:00: a git source takes a lowercase hex commit hash"},
		{"FROM python\nCOPY https://example.com/x /x\n", "line 2: COPY of a URL"},
		{"FROM python\nADD --checksum=sha256:00 https://example.com/x /x\n", "line 2: ADD --checksum=sha256:00: not a lowercase hex sha256 digest"},
		{"FROM python\nADD --checksum=md5:00 https://example.com/x /x\n", "line 2: ADD --checksum=md5:00: give sha256:"},
		{"FROM python\nADD --checksum=sha256:" + strings.Repeat("a", 64) + " local.txt /x\n", "line 2: ADD --checksum takes one http or https URL"},
		{"FROM python\nFROBNICATE x\n", "line 2"},
		{"RUN true\n", "line 1"},
	} {
		_, err := Parse([]byte(tc.file))
		if err == nil || !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want S001 with %q", tc.file, err, tc.want)
		}
	}
}

func TestParseAddURL(t *testing.T) {
	p, err := Parse([]byte("FROM python\nADD --checksum=sha256:" + strings.Repeat("a", 64) + " https://example.com/x /x\nADD http://example.com/y local.txt /opt/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Stages[0].Steps[0].Cmd.(*instructions.AddCommand); c.Checksum == "" || !IsURL(c.SourcePaths[0]) {
		t.Errorf("ADD --checksum: %+v", c)
	}
}

func TestExpandAndKey(t *testing.T) {
	p, err := Parse([]byte("FROM python\nWORKDIR /app/${SUB:-x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Stages[0].Steps[0].Cmd
	if err := Expand(c, Vars{"SUB=y"}); err != nil {
		t.Fatal(err)
	}
	if got := c.(*instructions.WorkdirCommand).Path; got != "/app/y" {
		t.Errorf("workdir %q", got)
	}
	ab, again := Key("a", "b"), Key("a", "b")
	if ab == Key("a", "c") || ab != again || Key("", "ab") == Key("", "a", "b") {
		t.Error("keys do not tell inputs apart")
	}
}

// contextTar is a tar of name/content pairs (a name ending in / is a dir).
func contextTar(t *testing.T, files ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i < len(files); i += 2 {
		h := &tar.Header{Name: files[i], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(files[i+1]))}
		if strings.HasSuffix(files[i], "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[i+1]))
	}
	tw.Close()
	return buf.Bytes()
}

func names(t *testing.T, b []byte) []string {
	var out []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err != nil {
			return out
		}
		out = append(out, h.Name)
	}
}

func TestContextIgnoreGlobAndDigest(t *testing.T) {
	c, err := LoadContext(bytes.NewReader(contextTar(t, ".dockerignore", "secret.txt\n**/*.log\n", "app/", "", "app/main.py", "print(1)", "app/debug.log", "x", "secret.txt", "s", "a.py", "a", "b.py", "b")), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.File("secret.txt"); ok {
		t.Error(".dockerignore'd file kept")
	}
	cp, err := c.Plan([]string{"app"}, "/srv/", CopyOptions{Chmod: "700"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, cp.Tar), ","); got != "srv/main.py" {
		t.Errorf("COPY app /srv/ wrote %s", got)
	}
	glob, err := c.Plan([]string{"*.py"}, "/code", CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(glob.Paths, ","); got != "/code/a.py,/code/b.py" {
		t.Errorf("COPY *.py /code wrote %s", got)
	}
	if _, err := c.Plan([]string{"secret.txt"}, "/x", CopyOptions{}); err == nil {
		t.Error("COPY of an ignored file succeeded")
	}
	if _, err := c.Plan([]string{"../etc/passwd"}, "/x", CopyOptions{}); err == nil {
		t.Error("COPY out of the context succeeded")
	}
	c2, _ := LoadContext(bytes.NewReader(contextTar(t, "app/", "", "app/main.py", "print(2)")), 1<<20)
	cp2, _ := c2.Plan([]string{"app"}, "/srv/", CopyOptions{Chmod: "700"})
	if cp2.Digest == cp.Digest {
		t.Error("a changed file did not change the digest")
	}
	if _, err := LoadContext(bytes.NewReader(contextTar(t, "big", strings.Repeat("x", 100))), 10); !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Errorf("an oversized context: %v", err)
	}
}

func TestAddUnpacksALocalTar(t *testing.T) {
	inner := contextTar(t, "lib/", "", "lib/a.txt", "A")
	c, err := LoadContext(bytes.NewReader(contextTar(t, "vendor.tar", string(inner), "plain.txt", "P")), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := c.Plan([]string{"vendor.tar", "plain.txt"}, "/opt/", CopyOptions{Unpack: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, cp.Tar), ","); got != "opt/lib,opt/lib/a.txt,opt/plain.txt" {
		t.Errorf("ADD vendor.tar plain.txt /opt/ wrote %s", got)
	}
}
