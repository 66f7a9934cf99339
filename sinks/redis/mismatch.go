package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/sinks"
)

// mismatch is why a ping that the server never answered as Redis does
// failed, when the server speaks another protocol than the URL: a
// rediss:// URL to a plain-text server waits for a TLS handshake that
// never comes (Redis takes the hello as the start of a command), a
// redis:// URL to a TLS-only one has its commands cut, and one to an HTTP,
// HTTPS or PostgreSQL server (a wrong port) gets an answer that is no RESP,
// or none (PostgreSQL closes at a PING it takes for a startup packet,
// which soakd retried as a lost connection). Each would be
// waited for until START_TIMEOUT; the probe, one connection to the first
// address, names the mismatch instead. nil when there is none to name (a
// server down, or one that is none of these).
func mismatch(ctx context.Context, cfg *Config) error {
	if cfg.Mode == Sentinel || len(cfg.Addrs) == 0 {
		return nil // the sentinels' TLS may differ from the servers'
	}
	ctx, cancel := context.WithTimeout(ctx, sinks.ProbeTimeout)
	defer cancel()
	addr := cfg.Addrs[0]
	b := sinks.PlainAnswer(ctx, addr, []byte("PING\r\n\r\n"), 5)
	if bytes.HasPrefix(b, []byte("HTTP/")) {
		return fmt.Errorf("the server at %s speaks HTTP, not Redis: check the target URL's host and port", addr)
	}
	if cfg.TLS && len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		return fmt.Errorf("the server at %s answers in plain text, not TLS: use redis:// rather than rediss:// (or the server's tls-port)", addr)
	}
	if len(b) == 0 && sinks.AnswersPostgreSQL(ctx, addr) {
		return fmt.Errorf("the server at %s speaks PostgreSQL, not Redis: check the target URL's host and port", addr)
	}
	// An HTTPS port (an ingress's 443) completes a TLS handshake too: it
	// is told from a Redis over TLS by its answer inside it.
	switch tlsOn, https := sinks.TLSProbe(ctx, addr); {
	case https:
		return fmt.Errorf("the server at %s speaks HTTPS, not Redis: check the target URL's host and port", addr)
	case tlsOn && !cfg.TLS:
		return fmt.Errorf("the server at %s speaks TLS: use rediss:// rather than redis:// (with ca= when its certificate is not signed by a trusted authority)", addr)
	}
	return nil
}

// mismatched wraps err, a failed ping, in the configuration error of a
// protocol mismatch when the probe finds one: before the server first
// answered, as soakd waits for it at start.
func (s *Sink) mismatched(ctx context.Context, err error) error {
	if s.answered.Load() || errors.Is(ctx.Err(), context.Canceled) {
		return err // it spoke the URL's protocol before, or stopped: no probe
	}
	m := mismatch(context.WithoutCancel(ctx), &s.cfg)
	if m == nil {
		return err
	}
	return sinks.NewError(sinks.Rejected, false, &sinks.ProtocolMismatch{Err: fmt.Errorf("%w (%v)", m, err)})
}

// modeMismatch is the configuration error of a redis-cluster:// or
// redis-sentinel:// URL whose server is a single Redis, as its answer to
// the ping says: a cluster client's CLUSTER SLOTS gets "cluster support
// disabled", a sentinel client's SENTINEL "unknown command". Without it
// the server's answer read as a refusal of the database or the
// credentials. nil when err says neither.
func (s *Sink) modeMismatch(err error) error {
	msg := strings.ToLower(err.Error())
	addrs := strings.Join(s.cfg.Addrs, ", ")
	var m error
	switch {
	case s.cfg.Mode == Cluster && strings.Contains(msg, "cluster support disabled"):
		m = fmt.Errorf("the server at %s is a single Redis, not a Redis Cluster (its cluster support is disabled): use redis:// rather than redis-cluster://", addrs)
	case s.cfg.Mode == Sentinel && strings.Contains(msg, "unknown command") && strings.Contains(msg, "sentinel"):
		m = fmt.Errorf("the server at %s is a single Redis, not a sentinel: use redis:// with its address rather than redis-sentinel://", addrs)
	default:
		return nil
	}
	return sinks.NewError(sinks.Rejected, false, &sinks.ProtocolMismatch{Err: fmt.Errorf("%w (%v)", m, err)})
}

// clusterMismatch is the configuration error of a redis:// or
// redis-sentinel:// URL whose server is a node of a Redis Cluster, as
// err, its answer to a command, says: MOVED (or ASK) for a key of a slot
// another node serves, "not allowed in cluster mode" for the SELECT of
// a database other than 0. Without it the reply read as a refusal of
// what the target holds, the database or the credentials, with no word
// of the scheme to use. nil when err says neither, or in cluster mode.
func (s *Sink) clusterMismatch(err error) error {
	if s.cfg.Mode == Cluster {
		return nil
	}
	msg := err.Error()
	var why string
	switch {
	case movedReply(err):
		why = "it answered MOVED: another node serves the key's slot"
	case strings.Contains(msg, "not allowed in cluster mode"):
		why = "it has database 0 only: drop the database from the URL"
	default:
		return nil
	}
	m := fmt.Errorf("the server at %s is a node of a Redis Cluster (%s): use %s with its address, or those of its masters, rather than %s",
		strings.Join(s.cfg.Addrs, ", "), why, s.clusterScheme(), s.scheme())
	return sinks.NewError(sinks.Rejected, false, &sinks.ProtocolMismatch{Err: fmt.Errorf("%w (%v)", m, err)})
}

// movedReply reports whether err is or wraps a MOVED or ASK reply, from
// go-redis or the RESP connection.
func movedReply(err error) bool {
	if redirected(err) {
		return true
	}
	var rerr goredis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// clusterDownHint says what to change when a cluster does not serve a
// key's slot: CLUSTERDOWN (slots unassigned, or the cluster failed), or
// go-redis finding no node with a slot (CLUSTER SLOTS empty: a node in
// cluster mode whose slots were never assigned). "" for other errors.
func (s *Sink) clusterDownHint(err error) string {
	msg := err.Error()
	if !strings.Contains(msg, "CLUSTERDOWN") && !strings.Contains(msg, "cluster has no nodes") {
		return ""
	}
	h := "the Redis Cluster is down or does not serve every slot (see CLUSTER INFO's cluster_state and cluster_slots_assigned): assign all 16384 slots to its masters, e.g. redis-cli --cluster create, or CLUSTER ADDSLOTSRANGE 0 16383 on a single node, or bring its failed masters back"
	if s.cfg.Mode != Cluster {
		h += "; and use " + s.clusterScheme() + " rather than " + s.scheme()
	}
	return h
}

// scheme is the target URL's scheme, as the user wrote it.
func (s *Sink) scheme() string {
	if sc, _, ok := strings.Cut(s.where, "://"); ok {
		return sc + "://"
	}
	return "redis://"
}

// clusterScheme is the URL scheme for a cluster with the URL's TLS.
func (s *Sink) clusterScheme() string {
	if s.cfg.TLS {
		return "redis-cluster:// (with tls=true)"
	}
	return "redis-cluster://"
}

// announceHint says, in cluster mode, that a failed dial was to a node's
// address as the cluster announces it (CLUSTER SLOTS), not to one of the
// URL's: a cluster in Docker or behind NAT announces addresses only its
// own network reaches, and the address in the error is then one the user
// never gave. "" for other errors, and for the URL's own addresses
// (their names resolved once, for the address a dial reports).
func (s *Sink) announceHint(err error) string {
	if s.cfg.Mode != Cluster {
		return ""
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || op.Addr == nil {
		return ""
	}
	addr := op.Addr.String()
	if slices.Contains(s.cfg.Addrs, addr) || slices.Contains(s.urlAddrs(), addr) {
		return ""
	}
	return fmt.Sprintf("%s is a node of the cluster at the address it announces (CLUSTER SLOTS), not an address of the target URL: "+
		"soakd reaches each node at the address the cluster gives; check that the node is up and that address reachable from soakd "+
		"(a cluster in Docker or behind NAT announces addresses only its own network reaches: cluster-announce-ip, cluster-announce-port)", addr)
}

// urlAddrs are the URL's addresses with their host names resolved, as a
// dial's error reports them; looked up once, for announceHint.
func (s *Sink) urlAddrs() []string {
	s.resolveOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, a := range s.cfg.Addrs {
			host, port, err := net.SplitHostPort(a)
			if err != nil || net.ParseIP(host) != nil {
				continue
			}
			ips, _ := net.DefaultResolver.LookupHost(ctx, host)
			for _, ip := range ips {
				s.resolved = append(s.resolved, net.JoinHostPort(ip, port))
			}
		}
	})
	return s.resolved
}
