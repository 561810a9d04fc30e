package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestCommandArgv(t *testing.T) {
	tests := []struct {
		name    string
		cmd     string
		args    []string
		argv    []string
		want    []string
		wantErr string
	}{
		{name: "cmd alone", cmd: "python3", want: []string{"python3"}},
		{name: "cmd and args", cmd: "python3", args: []string{"-c", "print(1)"}, want: []string{"python3", "-c", "print(1)"}},
		{name: "cmd split shell-word style", cmd: `python3 -c 'print("a b")'`, want: []string{"python3", "-c", `print("a b")`}},
		{name: "argv wins", argv: []string{"ls", "-l"}, want: []string{"ls", "-l"}},
		{name: "argv with cmd", cmd: "ls", argv: []string{"ls"}, wantErr: "either argv or cmd/args"},
		{name: "whitespace cmd with args", cmd: "ls -l", args: []string{"/"}, wantErr: "contains whitespace and args is set"},
		{name: "unbalanced quote", cmd: `echo 'oops`, wantErr: "cannot be split"},
		{name: "empty", wantErr: "cmd is required"},
		{name: "blank", cmd: "   ", wantErr: "cmd is required"},
		{name: "empty argv0", argv: []string{""}, wantErr: "argv[0] is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CommandArgv(tt.cmd, tt.args, tt.argv)
			if tt.wantErr != "" {
				if !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want S001 containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestValidateEnv(t *testing.T) {
	for _, ok := range [][]string{nil, {"A=1"}, {"_X=", "LANG=C.UTF-8", "K=a=b"}} {
		if err := ValidateEnv("env", ok); err != nil {
			t.Errorf("ValidateEnv(%q) = %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"NOVALUE"}, {"1A=x"}, {"A-B=x"}, {"=x"}, {"A=\x00"}} {
		if err := ValidateEnv("env", bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("ValidateEnv(%q) = %v, want S001", bad, err)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "LANG=C"}, []string{"LANG=en_US.UTF-8", "DB=x"}, []string{"DB=y"})
	want := []string{"PATH=/bin", "LANG=en_US.UTF-8", "DB=y"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseID(t *testing.T) {
	if _, err := ParseID("6f1c1b7e-2a55-4c1e-9d0e-0d5b6b7f8a90"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "abc", "6f1c1b7e2a554c1e9d0e0d5b6b7f8a90", "{6f1c1b7e-2a55-4c1e-9d0e-0d5b6b7f8a90}"} {
		if _, err := ParseID(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("ParseID(%q) = %v, want S001", bad, err)
		}
	}
}

func TestDecodeStdin(t *testing.T) {
	if b, err := DecodeStdin("aGk="); err != nil || string(b) != "hi" {
		t.Fatalf("got %q, %v", b, err)
	}
	if _, err := DecodeStdin("not base64!"); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Fatalf("err = %v, want S001", err)
	}
}

// issue 40: "~" and "~/sub" are the home of the command's user.
func TestValidateWorkdir(t *testing.T) {
	for _, ok := range []string{"", "/", "/srv/app", "~", "~/", "~/a/../b"} {
		if err := ValidateWorkdir(ok); err != nil {
			t.Errorf("ValidateWorkdir(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"rel", "~user", "./x", "/a\x00b", "~/\x00"} {
		if err := ValidateWorkdir(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("ValidateWorkdir(%q) = %v, want S001", bad, err)
		}
	}
}
