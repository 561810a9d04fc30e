package agentv1

// WindowBytes is the HTTP/2 flow-control window of the agent connection,
// set on both sides. Fixed windows turn off gRPC's bandwidth-estimation
// pings: every frame that crosses the sandbox wall costs a wakeup.
const WindowBytes = 8 << 20

// StreamWindowBytes is the yamux stream window of the agent session, set
// on both sides: two file chunks, so that a streamed file does not stop
// for a window update every 256 KiB (yamux's default), while what each
// side buffers stays small.
const StreamWindowBytes = 2 << 20

// BufferBytes is how much gRPC gathers before one write to the session
// (and, in the agent, reads at once): a 1 MiB file chunk crosses the
// sandbox wall in one write instead of 32 of gRPC's default 32 KiB. gRPC
// pools write buffers between idle connections, so a daemon with many
// sandboxes does not hold one per sandbox; only the agent sets the read
// buffer.
const BufferBytes = 1 << 20
