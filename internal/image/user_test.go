package image

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

func TestResolveUser(t *testing.T) {
	rootfs, outside := fixture(t)
	if err := apply(t, rootfs, ocitest.BusyboxFiles(t)); err != nil {
		t.Fatal(err)
	}
	// A second image whose /etc/passwd is an absolute symlink: it must be
	// read inside the rootfs, not from the host path it names.
	linked, _ := fixture(t)
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("evil:x:0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, linked, []ocitest.File{
		ocitest.Reg("real/passwd", "svc:x:500:501::/srv:/bin/sh\n", 0o644),
		ocitest.Symlink("etc/passwd", "/real/passwd"),
		ocitest.Symlink("etc/group", outside+"/passwd"),
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rootfs, user string
		want         *User
		wantErr      string
	}{
		{rootfs: rootfs, user: ""},
		{rootfs: rootfs, user: "app", want: &User{UID: 1000, GID: 1000, Groups: []uint32{10, 2000}, Home: "/home/app"}},
		{rootfs: rootfs, user: "1000", want: &User{UID: 1000, GID: 1000, Groups: []uint32{10, 2000}, Home: "/home/app"}},
		{rootfs: rootfs, user: "app:extra", want: &User{UID: 1000, GID: 2000, Home: "/home/app"}},
		{rootfs: rootfs, user: "app:4242", want: &User{UID: 1000, GID: 4242, Home: "/home/app"}},
		{rootfs: rootfs, user: "root", want: &User{UID: 0, GID: 0, Groups: []uint32{10}, Home: "/root"}},
		{rootfs: rootfs, user: "1234", want: &User{UID: 1234, GID: 0, Home: "/"}},
		{rootfs: rootfs, user: "1234:55", want: &User{UID: 1234, GID: 55, Home: "/"}},
		{rootfs: rootfs, user: "nobody", wantErr: `image user "nobody" is not in the image's /etc/passwd`},
		{rootfs: rootfs, user: "app:nogroup", wantErr: `image group "nogroup" is not in the image's /etc/group`},
		{rootfs: rootfs, user: ":1", wantErr: "not of the form"},
		{rootfs: rootfs, user: "app:", wantErr: "not of the form"},
		{rootfs: linked, user: "svc", want: &User{UID: 500, GID: 501, Home: "/srv"}},
		{rootfs: linked, user: "evil", wantErr: "is not in the image's /etc/passwd"},
		{rootfs: t.TempDir(), user: "app", wantErr: "is not in the image's /etc/passwd"},
		{rootfs: t.TempDir(), user: "7:8", want: &User{UID: 7, GID: 8, Home: "/"}},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			img := &Image{Rootfs: tt.rootfs, Config: Config{User: tt.user}}
			got, err := img.ResolveUser()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveUser(%q) = %+v, %v; want error %q", tt.user, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) {
				t.Fatalf("ResolveUser(%q) = %+v, want %+v", tt.user, got, tt.want)
			}
			if got != nil && (got.UID != tt.want.UID || got.GID != tt.want.GID || got.Home != tt.want.Home || !slices.Equal(got.Groups, tt.want.Groups)) {
				t.Errorf("ResolveUser(%q) = %+v, want %+v", tt.user, got, tt.want)
			}
		})
	}
}
