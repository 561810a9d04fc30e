package functions

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// bodyFake is filesFake that also takes uploads.
type bodyFake struct {
	*filesFake
	uploaded *string
}

func (f *bodyFake) Upload(_ context.Context, r api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	s := string(b)
	f.uploaded = &s
	return api.FsWriteResponse{BytesWritten: int64(len(b)), Path: r.Path}, nil
}

// TestFsContentStreams: sandbox::fs::write takes its content as a stream
// a transport carries beside the payload (Params.Body), and
// sandbox::fs::read gives the file's bytes as one when the transport takes
// it (Params.StreamBody): the table says so, and every transport gets the
// same function.
func TestFsContentStreams(t *testing.T) {
	ctx := waitCtx(t)
	f := &bodyFake{filesFake: &filesFake{data: []byte("file bytes")}}
	tab := New(Deps{Sandboxes: &fakeSandboxes{}, Files: f})
	for id, want := range map[string][2]bool{api.FnFsWrite: {true, false}, api.FnFsRead: {false, true}, api.FnFsLs: {false, false}} {
		fn, _ := tab.Lookup(id)
		if fn.TakesBody != want[0] || fn.GivesBody != want[1] {
			t.Errorf("%s: TakesBody %v, GivesBody %v; want %v", id, fn.TakesBody, fn.GivesBody, want)
		}
	}

	res, err := tab.Call(ctx, api.FnFsWrite, json.RawMessage(`{"path":"/w"}`), Params{SandboxID: "sb", Body: strings.NewReader("streamed")})
	if err != nil || res.(api.FsWriteResponse).BytesWritten != 8 || f.uploaded == nil || *f.uploaded != "streamed" {
		t.Fatalf("write from a stream: %+v, %v (uploaded %v)", res, err, f.uploaded)
	}
	if _, err := tab.Call(ctx, api.FnFsWrite, json.RawMessage(`{"path":"/w","content":"x"}`), Params{Body: strings.NewReader("y")}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("content and a stream: %v, want S001", err)
	}
	if _, err := tab.Call(ctx, api.FnFsLs, json.RawMessage(`{"path":"/"}`), Params{Body: strings.NewReader("y")}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("a stream to a function that takes none: %v, want S001", err)
	}

	res, err = tab.Call(ctx, api.FnFsRead, json.RawMessage(`{"path":"/f"}`), Params{SandboxID: "sb"})
	if r, ok := res.(api.FsReadResponse); err != nil || !ok || r.Body == nil || *r.Body != "file bytes" {
		t.Fatalf("read: %#v, %v", res, err)
	}
	res, err = tab.Call(ctx, api.FnFsRead, json.RawMessage(`{"path":"/f"}`), Params{SandboxID: "sb", StreamBody: true})
	c, ok := res.(*Content)
	if err != nil || !ok {
		t.Fatalf("read with its bytes as a stream: %#v, %v", res, err)
	}
	defer c.Rest.Close()
	if r := c.Result.(api.FsReadResponse); r.Body == nil || *r.Body != "file bytes" || !c.Whole {
		t.Fatalf("read's result beside its stream: %+v", c)
	}
	var got []byte
	for _, ev := range c.Pending {
		got = append(got, ev.Bytes...)
	}
	for {
		ev, err := c.Rest.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Bytes...)
	}
	if string(got) != "file bytes" {
		t.Fatalf("streamed %q", got)
	}
}
