package agentv1

import (
	"slices"
	"testing"
)

func TestFsUserRoundTrip(t *testing.T) {
	for _, u := range []FsUser{{UID: 1000, GID: 1000}, {UID: 0, GID: 5, Groups: []uint32{5, 27, 4294967295}}} {
		got, err := ParseFsUser(u.String())
		if err != nil || got.UID != u.UID || got.GID != u.GID || !slices.Equal(got.Groups, u.Groups) {
			t.Errorf("ParseFsUser(%q) = %+v, %v; want %+v", u.String(), got, err, u)
		}
	}
	for _, bad := range []string{"", "1000", "1000:1000", "a:1:", "1:1:x", "1:1:2,", "-1:0:", "4294967296:0:", "1:2:3:4"} {
		if u, err := ParseFsUser(bad); err == nil {
			t.Errorf("ParseFsUser(%q) = %+v, want an error", bad, u)
		}
	}
}

func TestIsFsMethod(t *testing.T) {
	for m, want := range map[string]bool{
		Fs_Upload_FullMethodName:   true,
		Fs_ReadFile_FullMethodName: true,
		Agent_Start_FullMethodName: false,
		"/hutch.agent.v1.Fsx/Ls":   false,
	} {
		if got := IsFsMethod(m); got != want {
			t.Errorf("IsFsMethod(%q) = %v, want %v", m, got, want)
		}
	}
}
