package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// sdkTerminalScript opens a terminal with the TypeScript SDK ($SDK) on the
// daemon its environment names, runs a line of shell and prints what the
// terminal showed and its exit code.
const sdkTerminalScript = `
const { Hutch } = await import(process.env.SDK)
const sb = await new Hutch().connect(process.env.SB)
const term = sb.pty({ cmd: 'sh' })
let shown = ''
term.ondata = (bytes) => { shown += new TextDecoder().decode(bytes) }
await term.write('echo ts-$((6*7)); exit 3\n')
const code = await term.exited
console.log(shown, 'exit', code)
`

// sdkTerminals (issue 41: 2): the TypeScript SDK's terminals reach a
// sandbox of the daemon at httpsURL, trusting caCert with token, and over
// its Unix socket sock.
func sdkTerminals(t *testing.T, sock, httpsURL, caCert, token string) {
	t.Helper()
	node := testutil.RequiresBinary(t, "node")
	testutil.NodeModules(t, filepath.Join("sdk", "typescript"), "ws")
	sdk := filepath.Join(testutil.RepoRoot(), "sdk", "typescript")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	local := client.NewUnix(sock, "")
	sb, err := local.Create(ctx, api.CreateRequest{Image: "python"})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Stop(context.Background(), sb.SandboxID, true)
	for _, env := range [][]string{
		{"HUTCH_URL=" + httpsURL, "HUTCH_CA_CERT=" + caCert, "HUTCH_TOKEN=" + token},
		{"HUTCH_URL=unix://" + sock, "HUTCH_CA_CERT=", "HUTCH_TOKEN="},
	} {
		cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", sdkTerminalScript)
		cmd.Env = append(os.Environ(), append(env, "SDK="+filepath.Join(sdk, "src", "index.js"), "SB="+sb.SandboxID)...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ts-42") || !strings.HasSuffix(strings.TrimSpace(string(out)), "exit 3") {
			t.Errorf("a TypeScript SDK terminal with %v: %v\n%s", env, err, out)
		}
	}
}
