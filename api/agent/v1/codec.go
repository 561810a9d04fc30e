package agentv1

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Codec is gRPC's proto codec for the agent connection, on both sides,
// cheaper (issue 46: 5): messages are marshaled into, and a message that
// came in several HTTP/2 frames is gathered into, Pool's buffers, which
// are not zeroed first (gRPC's default pool zeroed a 1 MiB tier for each
// 64 KiB port message, a fifth of the daemon's CPU in a preview
// transfer); a large output event or port message shares its buffer
// (aliasData). The wire is the same ("proto").
var Codec encoding.CodecV2 = codec{}

type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("agent codec: %T is not a proto message", v)
	}
	size := proto.Size(m)
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := proto.MarshalOptions{UseCachedSize: true}.Marshal(m)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	// Into Pool's buffer, written in full, as gRPC's proto codec does
	// into its zeroed ones.
	buf := Pool.Get(size)
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil || len(b) != size {
		Pool.Put(buf)
		if err == nil {
			err = fmt.Errorf("agent codec: %T changed while marshaled", v)
		}
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, Pool)}, nil
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
	if len(data) == 1 {
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	}
	// proto.Unmarshal copies what it keeps: the buffer goes back after.
	buf := data.MaterializeToBuffer(Pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

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
