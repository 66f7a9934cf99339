package config

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

// ShardAuto as a workload's SHARD takes the shard from the Kubernetes
// Indexed Job the process runs in: the index from JobIndexVar and the
// count from JobCountVar.
const ShardAuto = "auto"

// The variables SHARD=auto reads. Kubernetes sets JobIndexVar in every pod
// of an Indexed Job; it sets nothing for the count, so the Job's pod
// template sets JobCountVar to the Job's spec.completions.
const (
	JobIndexVar = "JOB_COMPLETION_INDEX"
	JobCountVar = "JOB_COMPLETIONS"
)

// autoShard returns the shard SHARD=auto means in environ:
// JOB_COMPLETION_INDEX of JOB_COMPLETIONS.
func autoShard(environ map[string]string) (sources.Shard, error) {
	num := func(name, what string) (int, error) {
		v, ok := environ[name]
		if !ok || strings.TrimSpace(v) == "" {
			return 0, fmt.Errorf("%s needs %s (%s)", ShardAuto, name, what)
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("%s: %s=%q is not a whole number", ShardAuto, name, v)
		}
		return n, nil
	}
	i, err := num(JobIndexVar, "Kubernetes sets it in the pods of an Indexed Job")
	if err != nil {
		return sources.Shard{}, err
	}
	n, err := num(JobCountVar, "set it to the Job's spec.completions")
	if err != nil {
		return sources.Shard{}, err
	}
	if n < 1 || i < 0 || i >= n {
		return sources.Shard{}, fmt.Errorf("%s: %s=%d of %s=%d: want 0 <= index < count", ShardAuto, JobIndexVar, i, JobCountVar, n)
	}
	return sources.Shard{Index: i, Count: n}, nil
}

// resolveShardAuto returns environ with prefix+SHARD=auto replaced by the
// shard it means, or environ itself when SHARD is not auto.
func resolveShardAuto(environ map[string]string, prefix string) (map[string]string, error) {
	key := prefix + "SHARD"
	if strings.TrimSpace(environ[key]) != ShardAuto {
		return environ, nil
	}
	out := maps.Clone(environ)
	sh, err := autoShard(environ)
	if err != nil {
		delete(out, key) // reported once, here, not again by the parser
		return out, &settings.Error{Key: key, Err: err}
	}
	out[key] = sh.String()
	return out, nil
}
