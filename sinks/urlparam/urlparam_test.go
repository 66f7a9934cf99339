package urlparam_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks/urlparam"
)

var testSet = urlparam.Set{Params: []urlparam.Param{
	{Name: "n", Type: urlparam.Int, Range: urlparam.Within(1, 10), Default: "3", Help: "a count"},
	{Name: "on", Type: urlparam.Bool, KeepEmpty: true, Help: "a switch"},
	{Name: "d", Type: urlparam.Duration, Range: urlparam.Above(0), Want: "a positive duration", Help: "a wait"},
	{Name: "at", Type: urlparam.DurationAt, Range: urlparam.Above(0), Help: "a step"},
	{Name: "f", Type: urlparam.Float, Range: urlparam.Within(0, 1), Help: "a fraction"},
	{Name: "mode", Type: urlparam.Enum, Choices: []string{"fast|quick", "slow"}, Fold: true, Default: "slow", Help: "a mode"},
	{Name: "name", Type: urlparam.String, Range: urlparam.Within(1, 4), KeepEmpty: true, Help: "a name"},
	{Name: "file", Type: urlparam.Path, Help: "a file"},
	{Name: "secret", Type: urlparam.Int, Secret: true, Help: "a secret number"},
	{Name: "odd", Type: urlparam.Custom, Syntax: "odd int", Help: "an odd number", Parse: func(s string) (any, error) {
		if s == "1" || s == "3" {
			return len(s), nil
		}
		return nil, fmt.Errorf("odd %q: want 1 or 3", s)
	}},
	{Name: "host", Type: urlparam.String, Multi: true, Valid: func(s string) bool { return !strings.Contains(s, "/") }, Help: "hosts"},
}}

func bind(t *testing.T, raw string) *urlparam.Query {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return testSet.Bind(q)
}

func TestDeclarationValid(t *testing.T) {
	if err := testSet.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := urlparam.Set{Params: []urlparam.Param{
		{Name: "a", Type: urlparam.Int, Default: "x", Help: "h"},
		{Name: "a", Type: urlparam.Int, Help: "h"},
		{Name: "c", Help: "h"},
		{Name: "e", Type: urlparam.Enum, Help: "h"},
		{Name: "u", Type: urlparam.Custom, Help: "h"},
		{Name: "n", Type: urlparam.Bool},
	}}
	err := bad.Validate()
	for _, want := range []string{"a: default", "a declared twice", "c has no type", "e: an Enum needs Choices", "u: a Custom", "n has no help"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
}

func TestDefaultsAndValues(t *testing.T) {
	p := bind(t, "")
	if p.Int("n") != 3 || p.Bool("on") || p.Duration("d") != 0 || p.Enum("mode") != "slow" || p.String("name") != "" || p.Value("odd") != nil {
		t.Error("defaults not applied")
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	p = bind(t, "n=7&on=1&d=2s&at=1s@5s&f=0.5&mode=QUICK&name=ab&file=/x&odd=3&host=a&host=b")
	d, after := p.DurationAt("at")
	if p.Int("n") != 7 || !p.Bool("on") || p.Duration("d") != 2*time.Second || d != time.Second || after != 5*time.Second ||
		p.Float("f") != 0.5 || p.Enum("mode") != "fast" || p.String("name") != "ab" || p.Path("file") != "/x" || p.Value("odd") != 1 ||
		strings.Join(p.All("host"), ",") != "a,b" {
		t.Error("values not read")
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	// An empty value is the default, unless KeepEmpty.
	p = bind(t, "n=&on=")
	if p.Int("n") != 3 || p.Bool("on") || !p.Has("n") || p.Given("n") {
		t.Error("empty n is not the default")
	}
	if err := p.Err(); err == nil || err.Error() != `on "": want true or false` {
		t.Errorf("empty on: %v", err)
	}
}

// Every malformed value is reported once, naming its parameter, in the
// order the accessors read them, and its accessor returns the default.
func TestErrors(t *testing.T) {
	p := bind(t, "n=11&d=-1s&at=1s&f=NaN&mode=x&name=abcde&file=&secret=hunter2&odd=2&host=a/b&zz=1")
	if p.Int("n") != 3 || p.Enum("mode") != "slow" {
		t.Error("a malformed value does not give the default")
	}
	p.Int("n")
	p.Duration("d")
	p.DurationAt("at")
	p.Float("f")
	p.String("name")
	p.Path("file")
	p.Int("secret")
	p.Value("odd")
	p.Given("host")
	want := `unknown parameter "zz" (known: n, on, d, at, f, mode, name, file, secret, odd, host)
n "11": want an integer 1..10
mode "x": want fast or slow
d "-1s": want a positive duration
at "1s": want DURATION@AFTER, e.g. 1s@10s
f "NaN": want a number 0..1
name "abcde": want a value of length 1..4
secret: want an integer
odd "2": want 1 or 3
host "a/b": want a valid value`
	if got := p.Err().Error(); got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

func TestRepeatedAndGroups(t *testing.T) {
	s := urlparam.Set{
		Params: []urlparam.Param{
			{Name: "a", Type: urlparam.String, Help: "h"},
			{Name: "b", Type: urlparam.String, Group: "x", Help: "h"},
			{Name: "m", Type: urlparam.String, Multi: true, Help: "h"},
		},
		Repeated: func(k string, n int) error { return fmt.Errorf("repeated %q", k) },
	}
	q, _ := url.ParseQuery("a=1&a=2&m=1&m=2&z=1&z=2&b=1")
	p := s.Read(q)
	p.CheckRepeated()
	p.CheckUnknown("y")
	if got := p.Err().Error(); !strings.Contains(got, `repeated "a"`) || strings.Contains(got, `"m"`) || strings.Contains(got, `repeated "z"`) ||
		!strings.Contains(got, `unknown parameter "b" (known: a, m)`) || !strings.Contains(got, `unknown parameter "z"`) {
		t.Errorf("errors: %s", got)
	}
	s.RepeatedUnknown = true
	p = s.Read(q)
	p.CheckRepeated()
	if got := p.Err(); got == nil || !strings.Contains(got.Error(), `repeated "z"`) {
		t.Errorf("RepeatedUnknown: %v", got)
	}
	// Unknown may let a parameter through.
	s.Unknown = func(k, _ string) error { return nil }
	if err := s.Bind(url.Values{"z": {"1"}}).Err(); err != nil {
		t.Errorf("Unknown returning nil: %v", err)
	}
}

func TestMisuse(t *testing.T) {
	for name, read := range map[string]func(p *urlparam.Query){
		"undeclared": func(p *urlparam.Query) { p.Int("nope") },
		"wrong type": func(p *urlparam.Query) { p.Bool("n") },
		"custom":     func(p *urlparam.Query) { p.Int("odd") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			read(bind(t, ""))
		}()
	}
}

func TestDocs(t *testing.T) {
	var b strings.Builder
	for _, d := range testSet.Docs() {
		b.WriteString(d.Name + " " + d.Type + " " + d.Default + "\n")
	}
	for _, want := range []string{"n int 1..10 3\n", "d duration > 0s \n", "mode fast|slow slow\n", "name string (1..4 bytes) \n",
		"odd odd int \n", "host string, repeatable \n", "f number 0..1 \n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("docs lack %q:\n%s", want, b.String())
		}
	}
}

// A malformed escape is refused without quoting it: it may sit in a
// secret. url.ParseQuery's error quotes it ("invalid URL escape "%zz""),
// which showed three characters of a password in soakd's error.
func TestParseQueryHidesTheEscape(t *testing.T) {
	for _, raw := range []string{"password=ab%zzcd", "token=%", "p=%4"} {
		_, err := urlparam.ParseQuery(raw)
		if err == nil || strings.Contains(err.Error(), "%") || !strings.Contains(err.Error(), "percent sign not followed by two hexadecimal digits") {
			t.Errorf("ParseQuery(%q): %v; want an error that says what is wrong, quoting none of it", raw, err)
		}
	}
	if q, err := urlparam.ParseQuery("a=1&p=x%25y"); err != nil || q.Get("p") != "x%y" {
		t.Errorf("ParseQuery of a valid query: %v, %v", q, err)
	}
}

// A well-formed escape in the host, which url.Parse refuses, was called a
// malformed escape ("a percent sign not followed by two hexadecimal
// digits"), which sent the user looking for a typo that is not there.
func TestHideEscapeTellsTheHostFromAMalformedEscape(t *testing.T) {
	for in, want := range map[string]error{
		"redis://%2Ftmp%2Fr.sock/0": urlparam.ErrEscapeInHost,
		"redis://my%2Dhost/0":       urlparam.ErrEscapeInHost,
		"redis://:sec%zzret@h/0":    urlparam.ErrMalformedEscape,
		"redis://h%z/0":             urlparam.ErrMalformedEscape,
	} {
		_, err := url.Parse(in)
		if got := urlparam.HideEscape(err); got != want {
			t.Errorf("HideEscape(url.Parse(%q)) = %v, want %v", in, got, want)
		}
	}
}
