package daemon

import "io"

// WriteSummaryText prints a summary as soakd does. Package summary writes
// the text and imports this package, so the engine's tests reach it
// through this variable, which summary_hook_test.go (an external test
// file) sets: the runs they drive are checked in the words people read.
var WriteSummaryText func(io.Writer, *Summary)
