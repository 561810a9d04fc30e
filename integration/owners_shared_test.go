package integration

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// What owners share (issue 12, items 4 and 5): the image cache is the
// operator's (admin_owners), errors never name another owner's sandboxes,
// max_sandboxes_per_owner keeps one owner from taking every slot, and with
// api_tokens only forwardable_ports reach a sandbox's gateway.

// ownersConfig is the api_tokens block of alice (an admin) and bob.
const ownersConfig = "api_tokens:\n  alice: " + aliceToken + "\n  bob: " + bobToken + "\nadmin_owners: [alice]\n"

func TestOwnersSharedImages(t *testing.T) {
	testutil.RequiresIntegration(t)
	reg := ocitest.NewRegistry(t, "", "")
	img, _ := appImage(t)
	ref := reg.Push(t, "tools/app:1", img)
	d := startDaemon(t, customConfig(t, "", ownersConfig+fmt.Sprintf("custom_images: {app: %q}\nimage_allowlist: [app]\nmax_sandboxes_per_owner: 1\n", ref)))
	ctx := context.Background()
	alice, bob := client.New(d.url, aliceToken), client.New(d.url, bobToken)
	d.c = alice
	a := d.create(api.CreateRequest{Image: "app"})
	d.c = bob
	b := d.create(api.CreateRequest{Image: "app"})

	t.Run("a non-admin cannot remove or pull", func(t *testing.T) {
		status, body := d.raw("DELETE", "/v1/images/app", bobToken, "")
		if status != 403 || !strings.Contains(body, `"code":"S110"`) {
			t.Fatalf("bob's image rm: %d %s; want 403 S110", status, body)
		}
		_, err := bob.PullImage(ctx, "app")
		wantCode(t, err, "S110")
		if st, err := alice.ImageStatus(ctx, "app"); err != nil || st.State != "ready" {
			t.Fatalf("the image after bob's attempts: %+v, %v", st, err)
		}
	})

	t.Run("the in-use refusal names no other owner's sandbox", func(t *testing.T) {
		_, err := alice.RemoveImage(ctx, "app")
		env := wantCode(t, err, "S111")
		if !strings.Contains(env.Message, "2 sandboxes") || !strings.Contains(env.Message, a) {
			t.Errorf("message %q: want the count and alice's own id", env.Message)
		}
		if strings.Contains(env.Message, b) || strings.Contains(fmt.Sprint(env.Fix), b) {
			t.Errorf("alice's error shows bob's sandbox %s: %+v", b, env)
		}
	})

	t.Run("image list counts the caller's sandboxes", func(t *testing.T) {
		for _, tc := range []struct {
			who  string
			c    *client.Client
			want int
		}{{"bob", bob, 1}, {"alice (admin)", alice, 2}} {
			list, err := tc.c.Images(ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.Images, func(im api.ImageInfo) bool { return im.Name == "app" })
			if i < 0 || list.Images[i].InUse != tc.want {
				t.Errorf("%s's image list: %+v, want in_use %d", tc.who, list.Images, tc.want)
			}
		}
	})

	t.Run("max_sandboxes_per_owner", func(t *testing.T) {
		_, err := bob.Create(ctx, api.CreateRequest{Image: "app"})
		env := wantCode(t, err, "S400")
		if !strings.Contains(env.Message, "max_sandboxes_per_owner=1") {
			t.Errorf("message %q", env.Message)
		}
	})

	t.Run("an admin removes an unused image", func(t *testing.T) {
		for _, c := range []struct {
			c  *client.Client
			id string
		}{{alice, a}, {bob, b}} {
			if _, err := c.c.Stop(ctx, c.id, true); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := alice.RemoveImage(ctx, "app"); err != nil || !r.Removed {
			t.Fatalf("alice's image rm: %+v, %v", r, err)
		}
		if st, err := alice.ImageStatus(ctx, "app"); err != nil || st.State != "missing" {
			t.Fatalf("status after rm: %+v, %v", st, err)
		}
	})
}

func TestOwnersForwardOnlyAllowedPorts(t *testing.T) {
	listed := hostServer(t, "listed")
	unlisted := hostServer(t, "unlisted")
	d := startDaemon(t, baseConfig(ownersConfig+fmt.Sprintf("forwardable_ports: [%d]\n", listed)))
	d.c = client.New(d.url, bobToken)
	listedURL := fmt.Sprintf("http://127.0.0.1:%d/", listed)
	unlistedURL := fmt.Sprintf("http://localhost:%d/", unlisted)
	resp, err := d.c.Create(context.Background(), api.CreateRequest{Image: "python", Network: true, Env: api.Env{
		"LISTED=" + listedURL, "UNLISTED=" + unlistedURL,
	}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	d.ids = append(d.ids, resp.SandboxID)
	id := resp.SandboxID
	if want := []uint16{uint16(unlisted)}; !slices.Equal(resp.UnforwardedPorts, want) {
		t.Errorf("unforwarded_ports = %v, want %v", resp.UnforwardedPorts, want)
	}

	env := strings.Split(strings.TrimSpace(d.exec(id, "sh", "-c", "echo $LISTED; echo $UNLISTED").Stdout), "\n")
	if len(env) != 2 {
		t.Fatalf("env: %q", env)
	}
	if env[1] != unlistedURL {
		t.Errorf("UNLISTED = %q, want it left as %q", env[1], unlistedURL)
	}
	u, err := url.Parse(env[0])
	if err != nil {
		t.Fatal(err)
	}
	gw, err := netip.ParseAddr(u.Hostname())
	if err != nil || gw.IsLoopback() {
		t.Fatalf("LISTED was not pointed at the gateway: %q", env[0])
	}
	got := d.fetch(id, env[0], fmt.Sprintf("http://%s:%d/", gw, unlisted))
	for i, want := range []string{"listed", "ERR"} {
		if i >= len(got) || !strings.HasPrefix(got[i], want) {
			t.Errorf("fetches from the sandbox: %q, want %q at %d", got, want, i)
		}
	}
}
