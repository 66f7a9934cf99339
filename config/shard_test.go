package config

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

// SHARD=auto reads the shard from the Indexed Job's variables; every
// problem names the workload's SHARD variable and what is missing.
func TestShardAuto(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    sources.Shard
		wantErr string // substring of the one SOAKD_SEQ_SHARD problem
	}{
		{name: "index of count", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"},
			want: sources.Shard{Index: 1, Count: 3}},
		{name: "last index", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "3"},
			want: sources.Shard{Index: 2, Count: 3}},
		{name: "one completion", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "1"},
			want: sources.Shard{Index: 0, Count: 1}},
		{name: "i/N is not auto", env: map[string]string{"SOAKD_SEQ_SHARD": "2/5", "JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"},
			want: sources.Shard{Index: 2, Count: 5}},
		{name: "not in a Job", env: map[string]string{"SOAKD_SEQ_SHARD": "auto"},
			wantErr: "auto needs JOB_COMPLETION_INDEX (Kubernetes sets it in the pods of an Indexed Job)"},
		{name: "no count", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "0"},
			wantErr: "auto needs JOB_COMPLETIONS (set it to the Job's spec.completions)"},
		{name: "index not a number", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "x", "JOB_COMPLETIONS": "3"},
			wantErr: `JOB_COMPLETION_INDEX="x" is not a whole number`},
		{name: "index past count", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "3"},
			wantErr: "JOB_COMPLETION_INDEX=3 of JOB_COMPLETIONS=3: want 0 <= index < count"},
		{name: "no completions", env: map[string]string{"SOAKD_SEQ_SHARD": "auto", "JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "0"},
			wantErr: "want 0 <= index < count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"SOAKD_WORKLOADS": "seq"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := Load(env, p.Sources)
			err = cfg.Check(p, err)
			if tc.wantErr != "" {
				probs := settings.Problems(err)
				if len(probs) != 1 || !strings.HasPrefix(probs[0].Error(), "SOAKD_SEQ_SHARD: ") || !strings.Contains(probs[0].Error(), tc.wantErr) {
					t.Fatalf("problems %q, want one SOAKD_SEQ_SHARD problem with %q", probs, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Workload[0].Shard; got != tc.want {
				t.Errorf("shard %v, want %v", got, tc.want)
			}
		})
	}
}

// Every workload set to auto gets the process's shard.
func TestShardAutoEveryWorkload(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "a,b", "SOAKD_A_SOURCE": "seq", "SOAKD_B_SOURCE": "seq",
		"SOAKD_A_SHARD": "auto", "SOAKD_B_SHARD": "auto", "JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "5"}, p)
	for _, w := range cfg.Workload {
		if w.Shard != (sources.Shard{Index: 4, Count: 5}) {
			t.Errorf("%s: shard %v, want 4/5", w.Name, w.Shard)
		}
	}
}
