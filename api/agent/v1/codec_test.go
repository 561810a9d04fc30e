package agentv1

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// split cuts b into pieces of 16 KiB, as gRPC hands a message that came in
// several HTTP/2 frames.
func split(b []byte) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		n := min(len(b), 16<<10)
		s = append(s, mem.SliceBuffer(bytes.Clone(b[:n])))
		b = b[n:]
	}
	return s
}

// TestCodecSharesLargeDataAsProtoDecodes checks the codec's own decoding
// of large output and port messages against proto.Unmarshal's, on good
// messages and on ones it must leave to proto (unknown fields, wrong wire
// types, truncation), as a sandbox may send.
func TestCodecSharesLargeDataAsProtoDecodes(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB
	must := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	output := must(&ProcessEvent{Event: &ProcessEvent_Output{Output: &Output{Stream: Stream_STREAM_STDERR, Offset: 1 << 40, Data: data, Dropped: 7}}})
	dial := must(&DialMessage{Port: 8080, Data: data, Connected: true})
	// Output's field 3 (data) as a varint, field 9 unknown, the same
	// message truncated.
	badType := protowire.AppendTag(nil, 2, protowire.BytesType)
	inner := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 5)
	inner = protowire.AppendBytes(protowire.AppendTag(inner, 9, protowire.BytesType), data)
	badType = protowire.AppendBytes(badType, inner)
	unknown := protowire.AppendBytes(protowire.AppendTag(bytes.Clone(dial), 9, protowire.BytesType), data)
	cases := []struct {
		name string
		wire []byte
		new  func() proto.Message
	}{
		{"output", output, func() proto.Message { return &ProcessEvent{} }},
		{"dial", dial, func() proto.Message { return &DialMessage{} }},
		{"dial, unknown field", unknown, func() proto.Message { return &DialMessage{} }},
		{"output, wrong wire type", badType, func() proto.Message { return &ProcessEvent{} }},
		{"output, truncated", output[:len(output)-1], func() proto.Message { return &ProcessEvent{} }},
		{"dial, truncated", dial[:len(dial)-1], func() proto.Message { return &DialMessage{} }},
		{"output in two", append(bytes.Clone(output), output...), func() proto.Message { return &ProcessEvent{} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, got := c.new(), c.new()
			werr := proto.Unmarshal(c.wire, want)
			gerr := Codec.Unmarshal(split(c.wire), got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("codec's error %v, proto's %v", gerr, werr)
			}
			if werr == nil && !proto.Equal(want, got) {
				t.Fatalf("codec decoded %v, proto %v", got, want)
			}
		})
	}
}

// TestCodecDataOutlivesGRPCBuffers checks that decoded data does not share
// the buffers gRPC reuses once Unmarshal returns.
func TestCodecDataOutlivesGRPCBuffers(t *testing.T) {
	data := bytes.Repeat([]byte{'x'}, 100<<10)
	b, err := proto.Marshal(&DialMessage{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	s := split(b)
	var m DialMessage
	if err := Codec.Unmarshal(s, &m); err != nil {
		t.Fatal(err)
	}
	for _, buf := range s {
		clear(buf.ReadOnlyData())
	}
	if !bytes.Equal(m.Data, data) {
		t.Fatal("decoded data changed with gRPC's buffers")
	}
}

// TestPoolTiers checks that Pool hands out buffers of the length asked,
// takes back only its own tiers' and allocates past the largest.
func TestPoolTiers(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 257, 16 << 10, 1<<20 + 20, 2 << 20, 2<<20 + 1} {
		b := Pool.Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d) has length %d", n, len(*b))
		}
		if n <= 2<<20 && cap(*b)&(cap(*b)-1) != 0 {
			t.Fatalf("Get(%d) has capacity %d, not a tier", n, cap(*b))
		}
		Pool.Put(b)
	}
	odd := make([]byte, 1000)
	Pool.Put(&odd) // not a tier's: dropped
	if b := Pool.Get(1000); cap(*b) != 1024 {
		t.Fatalf("Get(1000) has capacity %d, want 1024", cap(*b))
	}
}

// TestCodecMarshalsAsProto checks Codec's Marshal against proto's.
func TestCodecMarshalsAsProto(t *testing.T) {
	for _, m := range []proto.Message{
		&DialMessage{Port: 1},
		&ProcessEvent{Event: &ProcessEvent_Output{Output: &Output{Offset: 3, Data: bytes.Repeat([]byte{1}, 1<<20)}}},
	} {
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Codec.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want) {
			t.Fatalf("%T marshaled differently", m)
		}
		got.Free()
	}
}
