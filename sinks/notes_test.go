package sinks

import (
	"fmt"
	"slices"
	"testing"
)

// A note found again (each Prepare of a run that retries) is kept once,
// and a sink that found many keeps the first maxNotes: the summary
// stays short.
func TestNoteSet(t *testing.T) {
	var n NoteSet
	if got := n.Notes(); got != nil {
		t.Errorf("empty set: %q", got)
	}
	n.AddNote("a")
	n.AddNote("b")
	n.AddNote("a")
	if got := n.Notes(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("notes %q, want [a b]", got)
	}
	for i := range 2 * maxNotes {
		n.AddNote(fmt.Sprint(i))
	}
	got := n.Notes()
	if len(got) != maxNotes || got[0] != "a" || got[2] != "0" {
		t.Errorf("notes %q: want the first %d", got, maxNotes)
	}
	got[0] = "changed"
	if n.Notes()[0] != "a" {
		t.Error("Notes returned the set's own slice")
	}
}
