package config

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks"
)

func TestScrubberHidesTheSecretButNotTheURLItIsPartOf(t *testing.T) {
	tg, err := sinks.ParseTarget("postgres://postgres:postgres@127.0.0.1:1/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	w := &Workload{Name: "iot", Sink: tg}
	scrub := w.Scrubber()
	for in, want := range map[string]string{
		// soakd's own messages name the redacted URL: shown as is.
		"waiting for " + tg.Redacted + " (connect): refused": "waiting for postgres://postgres:xxxxx@127.0.0.1:1/postgres?sslmode=disable (connect): refused",
		// A driver quoting the password, or the raw URL.
		"host=127.0.0.1 user=u password=postgres": "host=127.0.0.1 user=u password=xxxxx",
		"dial postgres://postgres:postgres@h/db":  "dial postgres://xxxxx:xxxxx@h/db",
		// Both in one message, the secret after the kept URL.
		tg.Redacted + ": password=postgres": tg.Redacted + ": password=xxxxx",
		"no secret here":                    "no secret here",
	} {
		if got := scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScrubberWithAPasswordInsideTheSchemeOrHost(t *testing.T) {
	tg, err := sinks.ParseTarget("redis://:local@localhost:6379/0")
	if err != nil {
		t.Fatal(err)
	}
	scrub := (&Workload{Name: "kv", Sink: tg}).Scrubber()
	in := "cannot reach " + tg.Redacted + ": AUTH local failed"
	got := scrub(in)
	if strings.Contains(strings.TrimPrefix(got, "cannot reach "+tg.Redacted), "local") || !strings.HasPrefix(got, "cannot reach redis://:xxxxx@localhost:6379/0") {
		t.Errorf("scrub(%q) = %q", in, got)
	}
}

// A refusal of the credentials names where the ones given come from: a
// bearer token refused was blamed on the password settings, and a
// sentinel's refusal on the server's password.
func TestScrubberAuthHintNamesTheCredentialsGiven(t *testing.T) {
	target := func(u string) sinks.Target {
		tg, err := sinks.ParseTarget(u)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	msg := "HTTP 401: " + sinks.AuthFailed + ": unauthorized"
	for name, tc := range map[string]struct {
		w         *Workload
		msg       string
		want, not string
	}{
		"token": {&Workload{Name: "iot", Sink: target("prom+http://127.0.0.1:1/api/v1/write"), Token: "t0k"}, msg,
			"(the token: SOAKD_IOT_TOKEN or SOAKD_IOT_TOKEN_FILE)", "PASSWORD"},
		"password": {&Workload{Name: "iot", Sink: target("postgres://u@127.0.0.1:1/db"), Password: "pw"}, msg,
			"(the password: in SOAKD_IOT_TARGET's URL, SOAKD_IOT_PASSWORD or SOAKD_IOT_PASSWORD_FILE)", "TOKEN"},
		// InfluxDB's token= in the URL is the token sent, and no
		// password was given: it was blamed on the password settings.
		"token in the URL": {&Workload{Name: "iot", Sink: target("influx://127.0.0.1:1?bucket=b&token=admin:wrong")}, msg,
			"(the token: SOAKD_IOT_TARGET's URL (token=))", "PASSWORD"},
		"token in the URL, another in TOKEN": {&Workload{Name: "iot", Sink: target("influx1://127.0.0.1:1?db=x&auth=token&token=t1"), Token: "t2"}, msg,
			"(the token: SOAKD_IOT_TARGET's URL (token=))", "SOAKD_IOT_TOKEN"},
		"password in p=": {&Workload{Name: "iot", Sink: target("influx1://127.0.0.1:1?db=x&u=bob&p=pw"), Token: "t0k"}, msg,
			"the password in SOAKD_IOT_TARGET's URL", ""},
		"both": {&Workload{Name: "iot", Sink: target("influx://u:pw@127.0.0.1:1?db=x"), Token: "t0k"}, msg,
			"the password in SOAKD_IOT_TARGET's URL, SOAKD_IOT_PASSWORD or SOAKD_IOT_PASSWORD_FILE; the token in SOAKD_IOT_TOKEN or SOAKD_IOT_TOKEN_FILE", ""},
		"sentinel": {&Workload{Name: "kv", Sink: target("redis-sentinel://127.0.0.1:1/m?sentinel_password=sp"), Password: "pw"},
			sinks.AuthFailed + ": redis: all sentinels specified in configuration are unreachable: WRONGPASS",
			"(the sentinels' credentials: sentinel_username and sentinel_password in SOAKD_KV_TARGET's URL;", ""},
	} {
		got := tc.w.Scrubber()(tc.msg)
		if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
			t.Errorf("%s: %q; want it to contain %q and not %q", name, got, tc.want, tc.not)
		}
	}
}
