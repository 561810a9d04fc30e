package agentv1

import (
	"log/slog"

	"github.com/hashicorp/yamux"
)

// MaxRequestBytes is the largest request message the agent accepts and the
// host sends (an exec's stdin is carried in its request).
const MaxRequestBytes = 64 << 20

// DefaultMaxOutputBytes is the per-stream capture cap of an exec whose
// request leaves max_output_bytes at 0.
const DefaultMaxOutputBytes = 1 << 20

// MaxOutputBytes is the largest per-stream capture cap the agent grants;
// larger requests are lowered to it.
const MaxOutputBytes = 64 << 20

// DefaultRingBytes is the size of each output ring buffer of a process
// whose start leaves ring_bytes at 0; MaxRingBytes is the largest granted
// and MinRingBytes the smallest.
const (
	DefaultRingBytes = 1 << 20
	MaxRingBytes     = 64 << 20
	MinRingBytes     = 64 << 10
)

// MaxProcesses bounds the agent's process table, live and remembered
// processes together: a start finding it full of live ones is refused
// (ResourceExhausted); exited ones are dropped oldest first to make room.
const MaxProcesses = 1024

// OutputChunkBytes is the most output data one process event carries.
const OutputChunkBytes = ChunkBytes

// ChunkBytes is the size of one data message of a streamed transfer: each
// message costs a trip across the sandbox wall and a write in it, so large
// ones make transfers several times faster than 64 KiB did.
const ChunkBytes = 1 << 20

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

// AcceptBacklog is how many streams the other side opened may wait in a
// session to be accepted. The host opens one stream per gRPC connection and
// the agent opens none, so a few are plenty; on the host it bounds what
// code in a sandbox that writes its own frames can make the daemon buffer
// before the session is ended: AcceptBacklog streams of yamux's initial
// 256 KiB window, plus one accepted stream of StreamWindowBytes.
const AcceptBacklog = 4

// SessionConfig is the yamux configuration of the agent session, the same
// on both sides. Keepalives are off: a paused or checkpointed sandbox must
// not look dead to either side, and the end of the byte stream already
// tells each side the other is gone. yamux logs at debug level to log.
func SessionConfig(log *slog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false
	cfg.AcceptBacklog = AcceptBacklog
	cfg.MaxStreamWindowSize = StreamWindowBytes
	cfg.LogOutput = nil
	cfg.Logger = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	return cfg
}

// Bounds of a Ps answer: the processes it lists and the length of each
// command line it shows. The agent keeps to them; the host refuses more.
const (
	MaxPsEntries   = 4096
	MaxPsCommand   = 4096
	MaxPsUserBytes = 256
)

// issue 40: file metadata (E2B envd 0.6.2), kept as extended attributes.

// FsMetadataXattrPrefix is the extended attribute namespace of a file's
// user metadata: key k is the attribute FsMetadataXattrPrefix+k.
const FsMetadataXattrPrefix = "user.e2b."

// MaxFsMetadataKeys bounds the metadata keys of one file, written or read;
// MaxFsMetadataBytes bounds their keys and values together.
const (
	MaxFsMetadataKeys  = 64
	MaxFsMetadataBytes = 16 << 10
)
