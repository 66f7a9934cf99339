package settings

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// UnknownVars returns the SOAKD_* variables in environ that are no setting
// (typos, or settings of workloads not listed in SOAKD_WORKLOADS),
// ignoring those Kubernetes injects for a Service named soakd or soakd-*
// (serviceLinkVar) and the variables soakd's own tests and scripts read
// (OtherVars).
func UnknownVars(environ map[string]string, settings []Setting) []string {
	known := map[string]bool{}
	for _, s := range settings {
		known[s.Key] = true
	}
	var out []string
	for k := range environ {
		// soakd_iot_rate or SOAKD-IOT-RATE is a setting misspelled, as
		// SOAKD_IOT_RAT is: it was ignored without a word.
		if n := normalName(k); n != k && strings.HasPrefix(n, EnvPrefix) {
			out = append(out, k)
			continue
		}
		if !strings.HasPrefix(k, EnvPrefix) || known[k] || slices.Contains(OtherVars, k) ||
			strings.HasPrefix(k, EnvPrefix+"SERVICE_") || strings.HasPrefix(k, EnvPrefix+"PORT") || serviceLinkVar.MatchString(k) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// serviceLinkVar matches the variables the kubelet sets in every
// container of a namespace's pods (unless a pod sets enableServiceLinks:
// false) for a Service whose name starts with soakd: soakd-metrics in
// front of the sidecars' port, soakd-sharded in front of a Job's pods.
// The name in upper case with _ for -, then _SERVICE_HOST,
// _SERVICE_PORT, _SERVICE_PORT_<port name>, _PORT, and
// _PORT_<port>_<protocol> with _PROTO, _PORT or _ADDR. No setting ends so.
var serviceLinkVar = regexp.MustCompile(`^SOAKD(_[A-Z0-9_]+)?_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// normalName is k in upper case with - and . as _: the name of the
// setting a variable so spelled was meant to be.
func normalName(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return unicode.ToUpper(r)
	}, k)
}

// AllowUnknownVar turns unknown SOAKD_* variables from errors back into
// warnings: for an environment shared with another version of soakd.
const AllowUnknownVar = EnvPrefix + "ALLOW_UNKNOWN"

// OtherVars are SOAKD_* variables that are no setting but are read by
// soakd's tests, benchmarks and scripts (or name the escape hatch itself),
// so a shell or CI job that sets them can still run soakd.
var OtherVars = []string{
	AllowUnknownVar,
	EnvPrefix + "REQUIRE_SERVERS", // internal/testserver: fail, not skip, without test servers
	EnvPrefix + "SHARED_SERVERS",  // scripts: test servers shared between checkouts
	EnvPrefix + "PG_BIN",          // internal/testserver: PostgreSQL binaries
	EnvPrefix + "INFLUXD",         // internal/testserver: influxd binary
	EnvPrefix + "TEST_MAIN",       // cmd/soakd tests: the test binary runs main
	EnvPrefix + "SOAK_DURATION",   // cmd/soakd soak test
	EnvPrefix + "SOAK_OUT",        // cmd/soakd soak test
	EnvPrefix + "SOAK_CSV",        // cmd/soakd soak charts
	EnvPrefix + "SCREENSHOT",      // web browser test
	EnvPrefix + "CHARTS_OUT",      // charts test
	EnvPrefix + "BIN",             // bench scripts: the soakd binary
}

// AllowUnknown reports whether environ sets SOAKD_ALLOW_UNKNOWN true.
func AllowUnknown(environ map[string]string) bool {
	v, _ := strconv.ParseBool(environ[AllowUnknownVar])
	return v
}

// UnknownVarErrors explains each of the unknown variables unk (see
// UnknownVars): an *Error naming it, with the closest of settings (did
// you mean ...?) or else what hint, when not nil, says of it (e.g. that
// its workload is not listed), as " (...)".
func UnknownVarErrors(unk []string, settings []Setting, hint func(key string) string) []error {
	var errs []error
	for _, k := range unk {
		h := ""
		n := normalName(k)
		if n != k && slices.ContainsFunc(settings, func(s Setting) bool { return s.Key == n }) {
			h = " (did you mean " + n + "?)"
		} else if best, d := closestSetting(n, settings); best != "" && d <= MaxTypo(n) {
			h = " (did you mean " + best + "?)"
		} else if hint != nil {
			h = hint(k)
		}
		errs = append(errs, Errorf(k, "unknown variable%s; %s=1 makes this a warning", h, AllowUnknownVar))
	}
	return errs
}

// MaxTypo is how far a name may be from a setting's to be taken for its
// typo: two edits, or one in a short name, so that unrelated names get no
// misleading suggestion.
func MaxTypo(k string) int {
	if len(strings.TrimPrefix(k, EnvPrefix)) <= 4 {
		return 1
	}
	return 2
}

func closestSetting(k string, settings []Setting) (string, int) {
	best, bestD := "", math.MaxInt
	for _, s := range settings {
		if d := EditDistance(k, s.Key); d < bestD {
			best, bestD = s.Key, d
		}
	}
	return best, bestD
}

// EditDistance is the optimal string alignment (restricted
// Damerau-Levenshtein) distance: a swap of two neighbours (RAET) counts
// as one edit, as a user would count it.
func EditDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
