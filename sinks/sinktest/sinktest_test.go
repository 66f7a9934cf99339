package sinktest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestShown(t *testing.T) {
	t.Parallel()
	// echo repeats the whole URL, as a careless error would.
	echo := func(u *url.URL, _ sources.Kind) error { return fmt.Errorf("bad URL %s", u) }
	// keys names every parameter, never a value.
	keys := func(u *url.URL, _ sources.Kind) error {
		var names []string
		for k := range u.Query() {
			names = append(names, k)
		}
		return fmt.Errorf("unknown parameters %q", names)
	}
	// picky fails only for one password, and then shows it.
	picky := func(u *url.URL, _ sources.Kind) error {
		if pw, _ := u.User.Password(); pw == "%zz" {
			return errors.New("cannot parse password " + pw)
		}
		return nil
	}
	// query fails for a malformed query string, as url.ParseQuery does,
	// without showing any of it.
	query := func(u *url.URL, _ sources.Kind) error {
		if _, err := url.ParseQuery(u.RawQuery); err != nil {
			return errors.New("invalid query string: a percent sign not followed by two hexadecimal digits")
		}
		return nil
	}
	// headerName fails for a header with no colon and shows its name, as
	// the remote-write sink does.
	headerName := func(u *url.URL, _ sources.Kind) error {
		h := u.Query().Get("header")
		if name, _, ok := strings.Cut(h, " "); ok {
			return errors.New("header " + name + "...: want NAME:VALUE")
		}
		return nil
	}
	// nameless fails for a header that does not start with a character of
	// a header name, as the remote-write sink does, without showing it.
	nameless := func(u *url.URL, _ sources.Kind) error {
		if h := u.Query().Get("header"); h != "" && !hasAlnum(h[:1]) && !strings.Contains("!#$%&'*+-.^_`|~", h[:1]) {
			return errors.New("header (not NAME:VALUE): want NAME:VALUE")
		}
		return nil
	}
	// leadingToken shows the first 8 bytes of the header parameter and of
	// the password, as a careless "name" would.
	leadingToken := func(u *url.URL, _ sources.Kind) error {
		pw, _ := u.User.Password()
		h := u.Query().Get("header")
		return fmt.Errorf("header %.8s...: want NAME:VALUE; password %.8s...", h, pw)
	}
	for _, tc := range []struct {
		name  string
		check sinks.CheckFunc
		raw   string
		want  string
	}{
		{"password echoed", echo, "x://u:hunter2@h/db", "hunter2"},
		{"token echoed", echo, "x://h/?db=d&token=abc", "abc"},
		{"p echoed", echo, "x://h/?db=d&p=s3cret", "s3cret"},
		{"escaped token echoed", echo, "x://h/?token=a%2Fb", "a%2Fb"},
		{"no secrets", echo, "x://u@h/db?db=1", ""},
		{"secret also in the host", echo, "influx1://0?db=0&p=1", ""},
		{"key named, value not", keys, "x://h/?token=token", ""},
		{"shown only when malformed", picky, "x://u:%25zz@h/", "%zz"},
		{"a letter the error holds anyway", query, "influX:?p=y&p=%", ""},
		{"hex digits the error holds anyway", query, "x://h/?token=a&token=%zz", ""},
		{"punctuation echoed", echo, "x://h/?db=d&p=!!", "!!"},
		{"header value echoed", echo, "x://h/?header=X-Key:k3y", "k3y"},
		{"header name shown", headerName, "x://:0@h/?header=X0+00", ""},
		{"the start of a key shown", leadingToken, "x://h/?header=c2VjcmV0a2V5MTI%3D", "c2VjcmV0a2V5MTI%3D"},
		{"the start of a password shown", leadingToken, "x://u:hunter2hunter2@h/?header=a", "hunter2hunter2"},
		{"an escaped line break kept", nameless, "x://u:n@h/?header=%0A:x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := sinks.Parse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.check(u, sources.Series)
			if err == nil {
				t.Fatal("check accepted the URL")
			}
			if got := shown(tc.check, u, sources.Series, err); got != tc.want {
				t.Errorf("shown = %q, want %q (error %v)", got, tc.want, err)
			}
		})
	}
}

func TestWithSecretsKeepsTheRest(t *testing.T) {
	t.Parallel()
	u, err := sinks.Parse("x://u:pw@h:1/db?a=%41&token=t&b=2&P=x&p=y;z")
	if err != nil {
		t.Fatal(err)
	}
	got := withSecrets(u, func(string) string { return "R" }).String()
	if want := "x://u:R@h:1/db?a=%41&token=R&b=2&P=R&p=R"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	u, err = sinks.Parse("x://h/?header=X-Api-Key%3Ak&header=nocolon")
	if err != nil {
		t.Fatal(err)
	}
	got = withSecrets(u, func(string) string { return "R" }).String()
	if want := "x://h/?header=X-Api-Key%3AR&header=R"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	u, err = sinks.Parse("x://h/?token=%0A&p=%zz")
	if err != nil {
		t.Fatal(err)
	}
	got = withSecrets(u, func(s string) string { return sameShape(s, 0) }).String()
	if want := "x://h/?token=%0A&p=%zz"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := sameShape("aZ9%2Fg-", 0), "eZ7%7Ez-"; got != want {
		t.Errorf("sameShape = %s, want %s", got, want)
	}
}

// TestProxy checks that a frozen proxy passes no byte either way, takes
// new connections without forwarding them, and passes everything on once
// thawed.
func TestProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p := newProxy(t, ln.Addr().String())
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	roundTrip := func(c net.Conn, msg string, wait time.Duration) (string, error) {
		if _, err := c.Write([]byte(msg)); err != nil {
			return "", err
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, len(msg))
		_, err := io.ReadFull(c, buf)
		return string(buf), err
	}
	c := dial()
	if got, err := roundTrip(c, "ping", 5*time.Second); got != "ping" || err != nil {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	p.Freeze()
	var ne net.Error
	if _, err := roundTrip(c, "held", 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("frozen, an open connection got an answer: %v", err)
	}
	c2 := dial()
	if _, err := roundTrip(c2, "new!", 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("frozen, a new connection got an answer: %v", err)
	}
	p.Thaw()
	for _, conn := range []net.Conn{c, c2} {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(conn, buf); err != nil || !strings.Contains("held new!", string(buf)) {
			t.Fatalf("thawed: %q, %v", buf, err)
		}
	}
	p.Close()
	ln.Close()
	<-done
}
