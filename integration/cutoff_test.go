package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
)

// cutoffSize is the file each client starts to download before its sandbox
// is stopped: far more than all the buffers between agent and client hold.
const cutoffSize = 256 << 20

// bigFileSandbox creates a sandbox holding cutoffSize bytes at /tmp/big.
func bigFileSandbox(d *daemon) string {
	d.t.Helper()
	id := d.create(api.CreateRequest{Image: "python"})
	d.setup(id, "sh", "-c", "head -c 268435456 /dev/zero > /tmp/big")
	return id
}

// TestCutOffTransfersFail stops sandboxes in the middle of downloads: the
// Go client's reader fails, the CLI exits with an error, and an engine
// channel's reader gets a stream_error frame and an abnormal close. None of
// them can take the bytes that arrived for the whole file.
func TestCutOffTransfersFail(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	stop := func(t *testing.T, id string) {
		t.Helper()
		if _, err := d.c.Stop(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}

	ids := []string{bigFileSandbox(d), bigFileSandbox(d), bigFileSandbox(d)}

	t.Run("go client", func(t *testing.T) {
		id := ids[0]
		_, body, err := d.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/tmp/big"})
		if err != nil {
			t.Fatal(err)
		}
		defer body.Close()
		if _, err := io.ReadFull(body, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		stop(t, id)
		n, err := io.Copy(io.Discard, body)
		if err == nil || n+1<<20 >= cutoffSize {
			t.Fatalf("download cut off by a stop: %d more bytes, err %v; want an error before the end", n, err)
		}
	})

	t.Run("cli", func(t *testing.T) {
		id := ids[1]
		hutch, _ := binaries(t)
		cmd := exec.Command(hutch, "download", id, "/tmp/big", "-")
		cmd.Env = append(os.Environ(), "HUTCH_URL="+d.url)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(out, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		stop(t, id)
		n, _ := io.Copy(io.Discard, out)
		err = cmd.Wait()
		if err == nil || n+1<<20 >= cutoffSize {
			t.Fatalf("hutch download cut off by a stop: %d more bytes, exit %v, stderr %q; want a failure", n, err, errOut.String())
		}
	})

	t.Run("engine channel", func(t *testing.T) {
		id := ids[2]
		e := dialEngine(t, d)
		var res struct {
			Size    int64          `json:"size"`
			Content *api.StreamRef `json:"content"`
		}
		if env := e.call(api.FnFsRead, api.FsReadRequest{SandboxID: id, Path: "/tmp/big"}, &res); env != nil || res.Content == nil || res.Size != cutoffSize {
			t.Fatalf("fs::read of a big file: %+v, %+v", res, env)
		}
		r, _, err := websocket.Dial(ctx, d.engineURL+"/ws/channels/"+res.Content.ChannelID+"?key="+res.Content.AccessKey+"&dir=read", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.CloseNow()
		r.SetReadLimit(-1)
		if typ, _, err := r.Read(ctx); err != nil || typ != websocket.MessageBinary {
			t.Fatalf("first frame: %v %v", typ, err)
		}
		stop(t, id)
		var text []string
		for {
			typ, b, err := r.Read(ctx)
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusInternalError {
					t.Fatalf("stream cut off by a stop closed with %v, want status 1011", err)
				}
				break
			}
			if typ == websocket.MessageText {
				text = append(text, string(b))
			}
		}
		var msg struct {
			Type  string            `json:"type"`
			Error api.ErrorEnvelope `json:"error"`
		}
		if len(text) != 1 || json.Unmarshal([]byte(text[0]), &msg) != nil || msg.Type != "stream_error" || msg.Error.Code != "S218" {
			t.Fatalf("text frames of a cut-off stream: %q; want one stream_error with S218", text)
		}
		if !strings.Contains(msg.Error.Message, "aborted") {
			t.Errorf("stream_error message %q does not say the stream was aborted", msg.Error.Message)
		}
	})
}
