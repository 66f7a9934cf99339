package main

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/cli"
)

// Two KV workloads on one target and KEY_PREFIX that would write each
// other's keys are refused by the configuration check, naming the second
// one's KEY_PREFIX: records of another DATA_TYPE, FIELDS, FIELD_LENGTH
// or SEED, or both inserting new records. Workloads that read and update
// one data set alike share it, and another prefix or database separates
// them. Bug caught: a hash and a string workload on "soakd:" both passed
// their load check, and the hashes acknowledged were gone.
func TestWorkloadsWritingEachOthersKeys(t *testing.T) {
	base := map[string]string{"SOAKD_WORKLOADS": "kv,kv2", "SOAKD_KV2_SOURCE": "kv",
		"SOAKD_KV_TARGET": "redis://127.0.0.1:1/0", "SOAKD_KV2_TARGET": "redis://127.0.0.1:1/0"}
	for _, tc := range []struct {
		env  []string
		want string // "" = ok
	}{
		{[]string{"SOAKD_KV2_DATA_TYPE", "string"}, "holds that workload's records (DATA_TYPE=hash"},
		{[]string{"SOAKD_KV2_FIELD_LENGTH", "50"}, "FIELD_LENGTH=50"},
		{[]string{"SOAKD_KV2_SEED", "2"}, "SEED=2"},
		{[]string{"SOAKD_KV_WORKLOAD", "d", "SOAKD_KV2_WORKLOAD", "e"}, "both workloads insert new records"},
		{[]string{"SOAKD_KV2_WORKLOAD", "c"}, ""},
		{[]string{"SOAKD_KV2_WORKLOAD", "d"}, ""}, // a inserts nothing
		{[]string{"SOAKD_KV2_DATA_TYPE", "string", "SOAKD_KV2_KEY_PREFIX", "other:"}, ""},
		{[]string{"SOAKD_KV2_DATA_TYPE", "string", "SOAKD_KV2_TARGET", "redis://127.0.0.1:1/1"}, ""},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i+1 < len(tc.env); i += 2 {
			env[tc.env[i]] = tc.env[i+1]
		}
		code, _, stderr := run(t, env, "config", "--check")
		switch {
		case tc.want == "" && code != cli.ExitOK:
			t.Errorf("%v: exit %d, want ok\n%s", tc.env, code, stderr)
		case tc.want != "" && (code != cli.ExitConfig || !strings.Contains(stderr, "SOAKD_KV2_KEY_PREFIX: ") || !strings.Contains(stderr, tc.want)):
			t.Errorf("%v: exit %d, want 2 naming SOAKD_KV2_KEY_PREFIX and %q\n%s", tc.env, code, tc.want, stderr)
		}
	}
}
