package sinks

import (
	"slices"
	"sync"
)

// Noter is implemented by sinks whose target made something of the
// workload's settings that its figures depend on and the summary should
// say, not only the log: a dialect=timescaledb target that got plain
// tables. The engine reads Notes when the run ends.
type Noter interface {
	Notes() []string
}

// maxNotes bounds a sink's notes: each says something about the whole
// run, and a sink adds each at most once.
const maxNotes = 8

// NoteSet is the notes of a sink, for embedding: AddNote keeps each text
// once, the first maxNotes of them. Its zero value is ready.
type NoteSet struct {
	mu    sync.Mutex
	notes []string
}

// AddNote records note unless it is there already or the set is full.
func (n *NoteSet) AddNote(note string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.notes) < maxNotes && !slices.Contains(n.notes, note) {
		n.notes = append(n.notes, note)
	}
}

// Notes returns the notes added, in order; nil when none was.
func (n *NoteSet) Notes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.notes)
}
