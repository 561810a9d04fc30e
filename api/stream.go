package api

// StreamRef names one end of a stream channel of the engine WebSocket
// (engine::channels::create). Data flows over a WebSocket at
// /ws/channels/{channel_id}?key=<access_key>&dir=<direction>: binary
// frames carry the bytes, text frames control messages, and a normal
// close ends the stream.
type StreamRef struct {
	ChannelID string `json:"channel_id"`
	AccessKey string `json:"access_key"`
	// Direction is "read" (the end that receives) or "write".
	Direction string `json:"direction"`
}

// Stream directions.
const (
	StreamRead  = "read"
	StreamWrite = "write"
)

// ChannelCreateRequest is the payload of engine::channels::create.
type ChannelCreateRequest struct {
	// BufferSize is how many frames the channel holds before the writer
	// waits for the reader; 0 means the default.
	BufferSize int `json:"buffer_size,omitempty"`
}

// ChannelCreateResponse is the result of engine::channels::create: the
// two ends of a new channel.
type ChannelCreateResponse struct {
	Writer StreamRef `json:"writer"`
	Reader StreamRef `json:"reader"`
}
