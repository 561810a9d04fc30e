package agentv1

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	// The proto codec registers itself: Codec's Marshal is its.
	_ "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Codec is gRPC's proto codec for the agent connection, on both sides,
// with a cheaper Unmarshal (issue 46: 5): a message that came in several
// HTTP/2 frames is gathered into a buffer of its own size, where gRPC's
// takes one from its pool's tier (1 MiB for anything over 32 KiB) and
// zeroes the whole of it first: for a port's 64 KiB messages, 16 times the
// bytes, a fifth of the daemon's CPU in a preview transfer. The wire is
// the same ("proto").
var Codec encoding.CodecV2 = codec{}

type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("agent codec: %T is not a proto message", v)
	}
	switch {
	case len(data) == 1:
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	case data.Len() > pooledAbove:
		// Past the pool's largest tier its buffers are reused as they
		// are: a 1 MiB output chunk makes no garbage there.
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		return proto.Unmarshal(buf.ReadOnlyData(), m)
	}
	return proto.Unmarshal(data.Materialize(), m)
}

// pooledAbove is the size of gRPC's default pool's largest tier.
const pooledAbove = 1 << 20
