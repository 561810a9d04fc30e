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

// FsDownloadResponse is the final value of sandbox::fs::download, a
// streaming function (hutch extension): its events are one "entry" (an
// FsEntry) and then "data" events carrying the file's bytes in order.
type FsDownloadResponse struct {
	// Bytes is how many bytes of the file were sent.
	Bytes int64 `json:"bytes"`
}

// StreamResult is the engine's answer to a streaming function (other
// than sandbox::fs::read, whose stream is its content): the reader
// reference of a channel that carries the function's events once opened.
// Binary frames are the stream's bytes ("data" events); text frames are
// {"type":"event","event":<type>,"data":<JSON>} for other events, then
// exactly one {"type":"result","result":<final value>} or
// {"type":"error","error":<envelope>} before a normal close. A stream cut
// off (the reader too slow, the server shutting down) sends
// {"type":"stream_error","error":<envelope>} and closes abnormally.
type StreamResult struct {
	Stream StreamRef `json:"stream"`
}
