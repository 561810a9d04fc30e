package e2bapi

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/templatebuild"
)

func TestDockerfileOfSDKSteps(t *testing.T) {
	var files bytes.Buffer
	tw := tar.NewWriter(&files)
	tw.WriteHeader(&tar.Header{Name: "app/x.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	steps := []e2bStep{
		{Type: "ENV", Args: []string{"A", `va"l $x`}},
		{Type: "RUN", Args: []string{"apt-get install -y curl", "root"}},
		{Type: "COPY", Args: []string{"app", "/srv/app", "web", "0755"}, FilesHash: "h1"},
		{Type: "WORKDIR", Args: []string{"/srv"}},
		{Type: "USER", Args: []string{"web"}},
		{Type: "RUN", Args: []string{"echo hi"}},
	}
	df, ctxTar, err := dockerfileOf("python", steps, map[string][]byte{"h1": files.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := templatebuild.Parse([]byte(df))
	if err != nil {
		t.Fatalf("the Dockerfile of the steps does not parse: %v\n%s", err, df)
	}
	if n := len(plan.Stages[0].Steps); n != 8 {
		t.Errorf("%d steps in\n%s", n, df)
	}
	c, err := templatebuild.LoadContext(bytes.NewReader(ctxTar), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := c.File("app/x.txt"); !ok || string(b) != "x" {
		t.Errorf("the context lacks the uploaded file")
	}
	for _, bad := range [][]e2bStep{
		{{Type: "COPY", Args: []string{"a", "/b"}, FilesHash: "missing"}},
		{{Type: "ENV", Args: []string{"odd"}}},
		{{Type: "COPY", Args: []string{"a", "/b", "", "rwx"}, FilesHash: "h1"}},
		{{Type: "FROB", Args: []string{"x"}}},
	} {
		if _, _, err := dockerfileOf("python", bad, map[string][]byte{"h1": files.Bytes()}); err == nil || !strings.Contains(err.Error(), "S001") && !strings.Contains(err.Error(), "step 1") {
			t.Errorf("steps %+v: %v", bad, err)
		}
	}
}

func TestDockerfileOfRefusesInjectedLines(t *testing.T) {
	for _, st := range []e2bStep{
		{Type: "WORKDIR", Args: []string{"/x\nRUN evil"}},
		{Type: "USER", Args: []string{"a b"}},
		{Type: "ENV", Args: []string{"K\nRUN evil", "v"}},
		{Type: "RUN", Args: []string{"true", "root\nRUN evil"}},
	} {
		if _, _, err := dockerfileOf("python", []e2bStep{st}, nil); err == nil {
			t.Errorf("step %+v was taken", st)
		}
	}
}
