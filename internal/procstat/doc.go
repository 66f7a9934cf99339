// Package procstat reads this process's own CPU time and memory, for
// soakd's history and the capacity search's CPU share.
package procstat
