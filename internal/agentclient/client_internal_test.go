package agentclient

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// TestWithOutputCapCopiesEveryField sets every field of an ExecRequest and
// checks that withOutputCap's copy keeps them all: a field added later
// that the copy dropped would fail it.
func TestWithOutputCapCopiesEveryField(t *testing.T) {
	req := &agentv1.ExecRequest{}
	m := req.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString("s")
		case protoreflect.BytesKind:
			v = protoreflect.ValueOfBytes([]byte("b"))
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.Int64Kind:
			v = protoreflect.ValueOfInt64(7)
		case protoreflect.Uint32Kind:
			v = protoreflect.ValueOfUint32(7)
		default:
			t.Fatalf("field %s: kind %v not handled by this test", fd.Name(), fd.Kind())
		}
		if fd.IsList() {
			m.Mutable(fd).List().Append(v)
		} else {
			m.Set(fd, v)
		}
	}
	got := withOutputCap(req, 5)
	if got == req {
		t.Fatal("request over the cap returned unchanged")
	}
	if got.MaxOutputBytes != 5 {
		t.Errorf("max_output_bytes = %d, want 5", got.MaxOutputBytes)
	}
	got.MaxOutputBytes = req.MaxOutputBytes
	if !proto.Equal(got, req) {
		t.Errorf("copy differs:\n got %v\nwant %v", got, req)
	}
}
