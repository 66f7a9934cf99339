package influx

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
)

// lostDatabase is what the sink knows of its database going missing in
// the middle of a run: an InfluxDB restarted on an empty data directory,
// or the database dropped. Every write is then answered 404 "database not
// found"; like Telegraf, the sink creates the database again (when it
// created it at prepare) and has the batch resent.
type lostDatabase struct {
	mu      sync.Mutex
	created time.Time // when the sink last created it again
}

// recreateEvery bounds how often the database is created again: every
// worker's write fails at once when it goes, and one CREATE serves them.
const recreateEvery = time.Second

// onMissing handles a write answered with status code and message msg,
// classified as err: when it says the database is missing and the sink
// may create it, the database is created again and err is made safe to
// resend (nothing of the batch was stored).
func (s *Sink) onMissing(ctx context.Context, code int, msg string, err error) error {
	if code != http.StatusNotFound || !strings.HasPrefix(msg, "database not found") {
		return err
	}
	db, ok := s.recreatable()
	if !ok {
		return err
	}
	l := &s.lost
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.created) >= recreateEvery {
		if cerr := s.createDatabase(ctx, db); cerr != nil {
			s.log.Warn("the database is gone from the target, and cannot be created again", zap.String("database", db), zap.Error(cerr))
			return err
		}
		l.created = time.Now()
		s.log.Warn("the database was gone from the target (restarted on empty storage, or dropped): created it again; the batches refused are resent (RETRIES)",
			zap.String("database", db))
	}
	var se *sinks.Error
	if errors.As(err, &se) {
		se.Retry = true
	}
	return err
}

// recreatable is the database the sink creates again when it goes
// missing: only one it would create at prepare (InfluxDB 1.x, create not
// false), and only with the retention policy CREATE DATABASE makes.
func (s *Sink) recreatable() (string, bool) {
	if !s.cfg.Create {
		return "", false
	}
	db, rp := s.cfg.DB, s.cfg.RP
	if s.cfg.API == V2 {
		db, rp, _ = strings.Cut(s.cfg.Bucket, "/")
	} else if !s.cfg.Product.CreateDB {
		return "", false
	}
	return db, db != "" && (rp == "" || rp == "autogen")
}
