// Package procstat reads this process's own CPU time and memory, for
// soakd's history and the capacity search's CPU share, and another
// process's, found by pid or name, for the watch of a target's process
// (package targetwatch).
package procstat
