package sandbox

import (
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/records"
)

// record is the persisted metadata of one sandbox.
type record struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Image    string `json:"image"`
	ImageID  string `json:"image_id"`
	Owner    string `json:"owner,omitempty"`
	Runtime  string `json:"runtime"`
	CPUs     uint32 `json:"cpus"`
	MemoryMB uint32 `json:"memory_mb"`
	Network  bool   `json:"network"`
	// Egress is its egress policy (internal/sandbox/egress); nil is none.
	Egress          *api.EgressPolicy `json:"egress,omitempty"`
	IdleTimeoutSecs uint64            `json:"idle_timeout_secs"`
	Env             []string          `json:"env,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	// OnIdle, AutoResume, TimeoutSecs and Metadata are the create's life
	// terms (spec.CreateTerms).
	OnIdle      string            `json:"on_idle,omitempty"`
	AutoResume  bool              `json:"auto_resume,omitempty"`
	TimeoutSecs uint64            `json:"timeout_secs,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	// Volumes are the volumes it mounts (volumes.go).
	Volumes []api.VolumeMount `json:"volumes,omitempty"`
	Stopped bool              `json:"stopped"`
	// StopCause is absent from records of daemons before it was kept.
	StopCause  runtime.Cause `json:"stop_cause,omitempty"`
	StopReason string        `json:"stop_reason,omitempty"`
	StoppedAt  time.Time     `json:"stopped_at,omitzero"`

	// unforwarded are the loopback ports its create-time env named that
	// are not forwarded (SandboxNetwork.Gateway); answered by the create,
	// not persisted.
	unforwarded []uint16
	// forwarded are the ports its gateway forwards, which a wake from
	// hibernation forwards again; not persisted.
	forwarded []uint16
	// mounts are its volumes' bind mounts while it lives (volumes.go);
	// not persisted.
	mounts []runtime.Mount
}

// store persists sandbox records, and the records of services in buckets
// of their own (Records), in a bbolt file (package records).
type store struct {
	db        *records.DB
	sandboxes records.Bucket
}

// openStore opens (creating) the metadata database at path.
func openStore(path string) (*store, error) {
	db, err := records.Open(path, "sandboxes", "networks")
	if err != nil {
		return nil, err
	}
	return &store{db: db, sandboxes: db.In("sandboxes")}, nil
}

// put writes rec, replacing any record with its id.
func (s *store) put(rec *record) error { return s.sandboxes.Put(rec.ID, rec) }

// remove deletes the record of id, if any.
func (s *store) remove(id string) error { return s.sandboxes.Remove(id) }

// all returns every record; unreadable ones are reported by id.
func (s *store) all() ([]*record, []string, error) {
	return AllRecords(s.sandboxes, func(r *record) string { return r.ID })
}

// bucket is s's bucket name as Records, made if it is new.
func (s *store) bucket(name string) (records.Bucket, error) { return s.db.Bucket(name) }

func (s *store) close() error { return s.db.Close() }
