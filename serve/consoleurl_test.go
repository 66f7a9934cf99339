package serve

import (
	"net"
	"testing"
)

func TestConsoleURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9480}, "http://localhost:9480/"}, // ":9480"
		{&net.TCPAddr{IP: net.IPv4zero, Port: 9480}, "http://localhost:9480/"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 8080}, "http://[::1]:8080/"},
	} {
		if got := ConsoleURL(c.addr); got != c.want {
			t.Errorf("ConsoleURL(%v) = %s, want %s", c.addr, got, c.want)
		}
	}
}
