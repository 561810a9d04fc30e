package engineapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Bounds of the worker registry: how long a disconnected worker may
// reattach, and how many disconnected workers are remembered.
const (
	reattachTTL        = 10 * time.Minute
	maxRememberedIdles = 4096
	// reattachWait is how long a reattach waits for the previous
	// connection of its worker to finish closing (a client that
	// reconnects at once may be quicker than the server's teardown).
	reattachWait = 10 * time.Second
)

// workers remembers the worker ids handed out, so that a client that
// reconnects with its reattach token keeps its worker id.
type workers struct {
	mu sync.Mutex
	// m is guarded by mu.
	m map[string]*workerRecord
}

type workerRecord struct {
	tokenHash [sha256.Size]byte
	connected bool
	// gone, while the worker's connection is closing, is closed when it
	// has disconnected; nil otherwise.
	gone chan struct{}
	// leftAt is when the worker disconnected.
	leftAt time.Time
	// cursors is the last event each of its triggers delivered, by
	// trigger id, so a reattached worker's trigger resumes after it.
	cursors map[string]uint64
}

func newWorkers() *workers { return &workers{m: map[string]*workerRecord{}} }

// newToken returns a random reattach token and its hash.
func newToken() (string, [sha256.Size]byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	tok := hex.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok))
}

// add registers a new connected worker and returns its id and token.
func (w *workers) add() (id, token string) {
	id = uuid.NewString()
	token, hash := newToken()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(time.Now())
	w.m[id] = &workerRecord{tokenHash: hash, connected: true}
	return id, token
}

// reattach moves the connection of worker current to the disconnected
// worker prev when token is prev's; it returns prev's new token. A
// reattach to a worker whose connection is closing waits (up to
// reattachWait) for it to disconnect.
func (w *workers) reattach(prev, token, current string) (string, bool) {
	got := sha256.Sum256([]byte(token))
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		rec, ok := w.m[prev]
		if !ok || prev == current || subtle.ConstantTimeCompare(got[:], rec.tokenHash[:]) != 1 {
			return "", false
		}
		if !rec.connected {
			delete(w.m, current)
			newTok, hash := newToken()
			rec.tokenHash, rec.connected = hash, true
			return newTok, true
		}
		gone := rec.gone
		if gone == nil {
			return "", false // connected and not closing: another connection has it
		}
		w.mu.Unlock()
		select {
		case <-gone:
			w.mu.Lock()
		case <-time.After(reattachWait):
			w.mu.Lock()
			return "", false
		}
	}
}

// leaving marks worker id's connection as closing: a reattach to it
// waits for disconnect.
func (w *workers) leaving(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rec, ok := w.m[id]; ok && rec.gone == nil {
		rec.gone = make(chan struct{})
	}
}

// disconnect marks worker id gone; it may reattach for reattachTTL.
func (w *workers) disconnect(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rec, ok := w.m[id]; ok {
		rec.connected, rec.leftAt = false, time.Now()
		if rec.gone != nil {
			close(rec.gone)
			rec.gone = nil
		}
	}
}

// pruneLocked forgets workers gone for longer than reattachTTL and, past
// maxRememberedIdles, the ones gone longest.
func (w *workers) pruneLocked(now time.Time) {
	idle := 0
	var oldestID string
	var oldest time.Time
	for id, rec := range w.m {
		if rec.connected {
			continue
		}
		if now.Sub(rec.leftAt) > reattachTTL {
			delete(w.m, id)
			continue
		}
		idle++
		if oldestID == "" || rec.leftAt.Before(oldest) {
			oldestID, oldest = id, rec.leftAt
		}
	}
	if idle >= maxRememberedIdles {
		delete(w.m, oldestID)
	}
}

// cursor is the last event trigger tid of worker id delivered.
func (w *workers) cursor(id, tid string) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec, ok := w.m[id]
	if !ok {
		return 0, false
	}
	n, ok := rec.cursors[tid]
	return n, ok
}

// setCursor records that trigger tid of worker id delivered event n. A
// worker keeps the cursors of at most maxTriggersPerSession triggers.
func (w *workers) setCursor(id, tid string, n uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec, ok := w.m[id]
	if !ok {
		return
	}
	if rec.cursors == nil {
		rec.cursors = map[string]uint64{}
	}
	if _, ok := rec.cursors[tid]; !ok && len(rec.cursors) >= maxTriggersPerSession {
		return
	}
	rec.cursors[tid] = n
}
