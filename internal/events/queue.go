package events

import (
	"iter"
	"sort"
)

// queue is one owner's events, oldest first, with their bytes.
type queue struct {
	owner string
	// evs[head:] are kept; the slots before head are cleared, and given
	// back once they are half the slice.
	evs   []Event
	head  int
	bytes int
}

func (q *queue) len() int { return len(q.evs) - q.head }

func (q *queue) front() Event { return q.evs[q.head] }

func (q *queue) push(e Event) {
	q.evs = append(q.evs, e)
	q.bytes += Size(e)
}

// pop removes the oldest event and returns it.
func (q *queue) pop() Event {
	e := q.evs[q.head]
	q.evs[q.head] = Event{}
	q.head++
	q.bytes -= Size(e)
	if q.head >= 64 && q.head*2 >= len(q.evs) {
		q.evs = append([]Event(nil), q.evs[q.head:]...)
		q.head = 0
	}
	return e
}

// after returns the index in q.evs of the first event with an id above
// id.
func (q *queue) after(id uint64) int {
	return q.head + sort.Search(q.len(), func(i int) bool { return q.evs[q.head+i].ID > id })
}

// keptLocked yields the events f keeps, oldest first: the owner's queue,
// or every queue merged by id for an operator's reader.
func (l *Log) keptLocked(f Filter) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		keep := func(e Event) bool { return !f.Match(e) || l.expired(e) || yield(e) }
		if !f.AllOwners {
			q := l.owners[f.Owner]
			if q == nil {
				return
			}
			for _, e := range q.evs[q.after(f.After):] {
				if !keep(e) {
					return
				}
			}
			return
		}
		// A cursor per owner; each step takes the lowest id of their heads.
		type cursor struct {
			q *queue
			i int
		}
		var cs []cursor
		for _, q := range l.owners {
			if i := q.after(f.After); i < len(q.evs) {
				cs = append(cs, cursor{q, i})
			}
		}
		for len(cs) > 0 {
			lo := 0
			for j := range cs {
				if cs[j].q.evs[cs[j].i].ID < cs[lo].q.evs[cs[lo].i].ID {
					lo = j
				}
			}
			c := &cs[lo]
			if !keep(c.q.evs[c.i]) {
				return
			}
			if c.i++; c.i == len(c.q.evs) {
				cs = append(cs[:lo], cs[lo+1:]...)
			}
		}
	}
}
