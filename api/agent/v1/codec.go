package agentv1

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	// The proto codec registers itself: Codec's Marshal is its.
	_ "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
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
	if data.Len() > aliasAbove {
		// A large output chunk or port message: gathered into a buffer of
		// its own, which its data then shares (proto.Unmarshal copies a
		// bytes field out of the message: a second copy and a second
		// allocation of each MiB streamed).
		if aliasData(data, m) {
			return nil
		}
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

// aliasAbove is the size past which a ProcessEvent's output or a
// DialMessage's data shares the message's buffer instead of being copied
// out of it.
const aliasAbove = 32 << 10

// aliasData decodes data into m when m is a ProcessEvent carrying Output
// or a DialMessage, whose bytes then share one buffer of data's size, and
// reports whether it did. Anything else (another message, a field it does
// not know, a malformed one) is left to proto.Unmarshal, which decides.
func aliasData(data mem.BufferSlice, m proto.Message) bool {
	switch m := m.(type) {
	case *ProcessEvent:
		b := data.Materialize()
		body, ok := onlyField(b, 2)
		if !ok {
			return false
		}
		out := &Output{}
		if !decodeFields(body, func(num protowire.Number, isBytes bool, v uint64, bytes []byte) bool {
			if isBytes != (num == 3) {
				return false
			}
			switch num {
			case 1:
				out.Stream = Stream(int32(v))
			case 2:
				out.Offset = int64(v)
			case 3:
				out.Data = bytes
			case 4:
				out.Dropped = int64(v)
			default:
				return false
			}
			return true
		}) {
			return false
		}
		proto.Reset(m)
		m.Event = &ProcessEvent_Output{Output: out}
		return true
	case *DialMessage:
		var d DialMessage
		if !decodeFields(data.Materialize(), func(num protowire.Number, isBytes bool, v uint64, bytes []byte) bool {
			if isBytes != (num == 2) {
				return false
			}
			switch num {
			case 1:
				d.Port = uint32(v)
			case 2:
				d.Data = bytes
			case 3:
				d.Connected = v != 0
			default:
				return false
			}
			return true
		}) {
			return false
		}
		proto.Reset(m)
		m.Port, m.Data, m.Connected = d.Port, d.Data, d.Connected
		return true
	}
	return false
}

// onlyField is the body of b's one field, num, of the bytes type.
func onlyField(b []byte, num protowire.Number) ([]byte, bool) {
	n, typ, k := protowire.ConsumeTag(b)
	if k < 0 || n != num || typ != protowire.BytesType {
		return nil, false
	}
	body, m := protowire.ConsumeBytes(b[k:])
	return body, m >= 0 && k+m == len(b)
}

// decodeFields calls set with each field of b: a varint's value, or a
// bytes field's bytes (isBytes; nil when empty, as proto leaves them),
// which share b. It reports false on a field of another wire type, a
// malformed one, or set's false.
func decodeFields(b []byte, set func(num protowire.Number, isBytes bool, v uint64, bytes []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v uint64
		var bytes []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bytes, n = protowire.ConsumeBytes(b)
			if len(bytes) == 0 {
				bytes = nil
			}
		default:
			return false
		}
		if n < 0 || !set(num, typ == protowire.BytesType, v, bytes) {
			return false
		}
		b = b[n:]
	}
	return true
}
