// Package config is soakd's configuration: the run's settings (SOAKD_*)
// and each workload's (SOAKD_<W>_*, its source's own included), loaded
// from the environment and flags (Load) and checked without I/O against
// the sources and sinks soakd knows (Validate, Check), every problem
// naming its variable; the capacity search's and the sweep's settings;
// and what commands show of them (Settings, unknown variables with their
// hints).
//
// It sits below the engine (package daemon), which runs a Config, so the
// features and commands that read configuration need not import the
// engine to do so.
package config
