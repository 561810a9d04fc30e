package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
)

// userImage is an image whose /etc/passwd defines app (1000, home
// /home/app) and root.
func userImage(t *testing.T, user string) *image.Image {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"passwd": "root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
		"group":  "root:x:0:\napp:x:1000:\n",
	} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &image.Image{Name: "img", Rootfs: root, Config: image.Config{User: user}}
}

// TestImageUser: the image's USER resolves; one it does not define is
// S300 and the image's own user is untouched by a named one.
func TestImageUser(t *testing.T) {
	u, err := ImageUser(userImage(t, "app"))
	if err != nil || u == nil || u.UID != 1000 || u.Home != "/home/app" {
		t.Fatalf("app: %+v, %v", u, err)
	}
	if u, err := ImageUser(userImage(t, "")); err != nil || u != nil {
		t.Fatalf("no USER: %+v, %v, want root (nil)", u, err)
	}
	if _, err := ImageUser(userImage(t, "ghost")); !errdefs.Is(err, errdefs.CodeBootFailed) {
		t.Fatalf("ghost: %v, want S300", err)
	}
}

// TestNamedUser: a named user resolves over the image, root named is root
// with /root, one that does not resolve is S001; the image is unchanged.
func TestNamedUser(t *testing.T) {
	img := userImage(t, "app")
	if u, err := NamedUser(img, "0"); err != nil || u.UID != 0 || u.Home != "/root" {
		t.Fatalf("0: %+v, %v", u, err)
	}
	if u, err := NamedUser(img, "app"); err != nil || u.UID != 1000 {
		t.Fatalf("app: %+v, %v", u, err)
	}
	if _, err := NamedUser(img, "ghost"); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Fatalf("ghost: %v, want S001", err)
	}
	if img.Config.User != "app" {
		t.Fatalf("the image's user became %q", img.Config.User)
	}
}

func TestBaseEnvAndFsUser(t *testing.T) {
	if got := BaseEnv(nil); !slices.Equal(got, []string{defaultPath, "HOME=/root"}) {
		t.Errorf("root: %v", got)
	}
	if got := BaseEnv(&image.User{Home: "/home/app"}); got[1] != "HOME=/home/app" {
		t.Errorf("app: %v", got)
	}
	if FsUser(nil) != nil {
		t.Error("root has an fs user")
	}
	if fu := FsUser(&image.User{UID: 7, GID: 8, Groups: []uint32{9}}); fu.UID != 7 || fu.GID != 8 || !slices.Equal(fu.Groups, []uint32{9}) {
		t.Errorf("fs user %v", fu)
	}
}
