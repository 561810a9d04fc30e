package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

// A template's FROM of an OCI reference (issue 39: 1): a reference that
// image_allowlist lists is pulled like a custom image and built on; one
// it does not list is refused before any step runs, with the FROM's line.
func TestTemplateBuildFromReference(t *testing.T) {
	reg := ocitest.NewRegistry(t, "", "")
	img, base := appImage(t)
	baseDigest, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Push(t, "tools/app:1", img)
	other := reg.Push(t, "tools/other:1", img)
	d := startDaemon(t, customConfig(t, "", fmt.Sprintf("image_allowlist: [python, %q]\n", ref)))
	ctx := context.Background()

	_, err = d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "refused", Dockerfile: "ARG BASE\nFROM " + other + "\nRUN echo never\n"}, nil)
	if env := wantCode(t, err, "S100"); !strings.Contains(env.Message, "Dockerfile line 2: FROM "+other) {
		t.Errorf("a FROM of a reference outside image_allowlist: %s", env.Message)
	}
	if n := reg.BlobGets(baseDigest); n != 0 {
		t.Errorf("the refused build fetched the image's layer %d times", n)
	}

	var log []string
	resp, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "onref",
		Dockerfile: "FROM " + ref + "\nUSER root\nRUN echo built on $GREETING > /srv/built\n"}, func(ev api.TemplateBuildEvent) error {
		log = append(log, ev.Instruction+ev.Output)
		return nil
	})
	if err != nil {
		t.Fatalf("build FROM %s: %v\n%s", ref, err, strings.Join(log, "\n"))
	}
	if resp.Template.Name != "onref" {
		t.Errorf("built %+v", resp.Template)
	}
	id := d.create(api.CreateRequest{Template: "onref"})
	if r := d.exec(id, "cat", "/srv/built", "/srv/marker"); r.Stdout != "built on hello\ncustom image\n" {
		t.Errorf("a sandbox of the template: %q %q", r.Stdout, r.Stderr)
	}

	// A build in progress is cancelled by name (issue 39: 4): it fails
	// with the cancel's error and a second cancel finds none.
	steps := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		_, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "slow", Dockerfile: "FROM " + ref + "\nRUN sleep 600\n"},
			func(ev api.TemplateBuildEvent) error {
				if ev.Instruction != "" {
					select {
					case steps <- ev.Instruction:
					default:
					}
				}
				return nil
			})
		done <- err
		close(steps)
	}()
	for ins := range steps {
		if strings.HasPrefix(ins, "RUN") {
			break
		}
	}
	if status, body := d.raw("DELETE", "/v1/templates/build/slow", "", ""); status != 200 || !strings.Contains(body, `"cancelled":1`) {
		t.Fatalf("cancel: %d %s", status, body)
	}
	if env := wantCode(t, <-done, "S001"); !strings.Contains(env.Message, "cancelled") {
		t.Errorf("the cancelled build: %s", env.Message)
	}
	if status, body := d.raw("DELETE", "/v1/templates/build/slow", "", ""); status != 404 || !strings.Contains(body, "S007") {
		t.Errorf("a cancel with no build: %d %s", status, body)
	}
}
