package influx

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
)

// Ping reports whether the target answers its ping endpoint with 2xx
// (v1: the product's ping path, v2: /ping, which InfluxDB 1.8, 2.x and 3.x
// serve).
func (s *Sink) Ping(ctx context.Context) error {
	_, err := s.ping(ctx)
	return err
}

// ServerVersion is the server's version from its ping answer (the
// X-Influxdb-Version header), for reports.
func (s *Sink) ServerVersion(ctx context.Context) (string, error) {
	v, err := s.ping(ctx)
	if err == nil && v != "" {
		v = s.cfg.Product.Name + " " + v
	}
	return v, err
}

// ping returns the server's X-Influxdb-Version header.
func (s *Sink) ping(ctx context.Context) (string, error) {
	path := "/ping"
	if s.cfg.API == V1 {
		path = s.cfg.PingPath
	}
	resp, err := s.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		err = sinks.OtherProtocol(ctx, err, s.cfg.baseURL())
		return "", fmt.Errorf("cannot ping %s: %w", s.cfg.String(), err)
	}
	resp.Body.Close()
	return resp.Header.Get("X-Influxdb-Version"), nil
}

// Prepare creates the database (v1: CREATE DATABASE through InfluxQL
// /query, for InfluxDB) or the bucket (v2: InfluxDB 2.x buckets API;
// InfluxDB 1.8 through /query; 3.x creates databases on the first write)
// unless ?create=false, checks on InfluxDB 1.x that what the writes name
// exists (checkStore); for a query workload it only starts watching the
// data's time range. It is idempotent.
func (s *Sink) Prepare(ctx context.Context) error {
	if s.q != nil {
		// A query workload reads what another writes and never creates
		// or changes anything on the target: a database that is not
		// there is what the range watch tells.
		return s.StartRangeWatch(ctx)
	}
	if err := s.prepareStore(ctx); err != nil {
		return err
	}
	if err := s.checkStore(ctx); err != nil {
		return err
	}
	return s.StartRangeWatch(ctx)
}

// checkStore refuses, on InfluxDB 1.x, what the writes name and the
// server lacks: with ?create=false a database that does not exist (every
// write would be answered 404 "database not found"), and a retention
// policy (?rp=, or the bucket's DB/RP) that the database does not have
// (500 "retention policy not found"). Servers other than InfluxDB 1.x
// are not asked.
func (s *Sink) checkStore(ctx context.Context) error {
	db, rp := s.cfg.DB, s.cfg.RP
	if s.cfg.API == V2 {
		db, rp, _ = strings.Cut(s.cfg.Bucket, "/")
	} else if !s.cfg.Product.CreateDB {
		return nil // not InfluxDB
	}
	if s.cfg.Create && rp == "" {
		return nil // createDatabase made sure the database exists
	}
	if ok, err := s.isInfluxDB1(ctx); err != nil || !ok {
		return err
	}
	if !s.cfg.Create {
		if err := s.checkDatabase(ctx, db); err != nil {
			return err
		}
	}
	if rp == "" {
		return nil
	}
	return s.checkRetentionPolicy(ctx, db, rp)
}

// checkDatabase refuses a database SHOW DATABASES does not list. InfluxDB
// lists to a user who is not an admin the databases it may read or
// write: one it does not list is one the user cannot write to either.
func (s *Sink) checkDatabase(ctx context.Context, db string) error {
	names, err := s.databases(ctx)
	if errors.Is(err, errNotListed) {
		s.log.Info("cannot check that the database exists: the server lists none", zap.String("database", db), zap.Error(err))
		return nil
	}
	if err != nil || slices.Contains(names, db) {
		return err
	}
	param := "db="
	if s.cfg.API == V2 {
		param = "bucket="
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return sinks.NewError(sinks.Rejected, false, fmt.Errorf("database %q not found among those the target URL's user may read or write (%s): create it, leave out create=false to have soakd create it, or fix the target URL's %s",
		db, cmp.Or(strings.Join(quoted, ", "), "none"), param))
}

// isInfluxDB1 reports whether the target is InfluxDB 1.x: its ping says
// version 1, or says none (1.x built from source says "unknown") and the
// server has no 2.x buckets API.
func (s *Sink) isInfluxDB1(ctx context.Context) (bool, error) {
	ver, err := s.ping(ctx)
	if err != nil {
		return false, err
	}
	switch majorVersion(ver) {
	case 1:
		return true, nil
	case 0:
		resp, err := s.do(ctx, http.MethodGet, "/api/v2/buckets?limit=1", "", nil)
		if err == nil {
			resp.Body.Close()
			return false, nil
		}
		var se *StatusError
		if errors.As(err, &se) {
			return se.StatusCode == http.StatusNotFound, nil
		}
		return false, err
	}
	return false, nil
}

// checkRetentionPolicy refuses a retention policy db lacks. A user who may
// not read the database (SHOW RETENTION POLICIES needs READ; a user
// granted WRITE only) cannot tell: then the writes' answers will.
func (s *Sink) checkRetentionPolicy(ctx context.Context, db, rp string) error {
	stmt := "SHOW RETENTION POLICIES ON " + quoteIdent(db)
	rows, err := s.showQuery(ctx, stmt)
	if errors.Is(err, errNotListed) {
		s.log.Info("cannot check the retention policy: the server lists none", zap.String("rp", rp), zap.String("database", db), zap.Error(err))
		return nil
	}
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusForbidden {
			s.log.Info("cannot check the retention policy: the user may not read the database", zap.String("rp", rp), zap.String("database", db), zap.Error(err))
			return nil
		}
		return err
	}
	var names []string
	for _, v := range rows {
		if len(v) > 0 {
			name, _ := v[0].(string)
			if name == rp {
				return nil
			}
			names = append(names, strconv.Quote(name))
		}
	}
	param := "rp="
	if s.cfg.API == V2 {
		param = "bucket=DB/RP"
	}
	return sinks.NewError(sinks.Rejected, false, fmt.Errorf("retention policy %q not found on database %q (it has %s): create it (CREATE RETENTION POLICY), or fix the target URL's %s",
		rp, db, cmp.Or(strings.Join(names, ", "), "none"), param))
}

// showQuery runs an InfluxQL SHOW statement through GET /query and
// returns the values of its first series; the statement's error is
// rejected.
func (s *Sink) showQuery(ctx context.Context, stmt string) ([][]any, error) {
	var out struct {
		Error   string `json:"error"`
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	resp, err := s.do(ctx, http.MethodGet, "/query?"+url.Values{"q": {stmt}}.Encode(), "", nil)
	var se *StatusError
	if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusMethodNotAllowed) {
		return nil, fmt.Errorf("%s on %s: %w (%w)", stmt, s.cfg.String(), errNotListed, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", stmt, s.cfg.String(), err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out); err != nil {
		return nil, sinks.ClassifyHTTPTransport(ctx, fmt.Errorf("cannot read the answer to %s from %s: %w", stmt, s.cfg.String(), err), true)
	}
	var rows [][]any
	series := 0
	for _, r := range out.Results {
		if r.Error != "" {
			out.Error = r.Error
		}
		series += len(r.Series)
		for _, ser := range r.Series {
			rows = append(rows, ser.Values...)
		}
	}
	if out.Error != "" {
		return nil, sinks.NewError(sinks.Rejected, false, fmt.Errorf("%s on %s: %s", stmt, s.cfg.String(), out.Error))
	}
	if series == 0 {
		// InfluxDB answers a SHOW with its series, if empty; a
		// front end that only takes writes (Telegraf's influxdb_listener)
		// answers {"results":[]}.
		return nil, fmt.Errorf("%s on %s: %w", stmt, s.cfg.String(), errNotListed)
	}
	return rows, nil
}

// errNotListed is a SHOW the server does not answer as InfluxDB does (no
// /query, or no series at all): a front end that takes writes only, which
// cannot say what it lacks.
var errNotListed = errors.New("the server lists nothing")

// prepareStore creates the database or bucket.
func (s *Sink) prepareStore(ctx context.Context) error {
	if !s.cfg.Create {
		return nil
	}
	if s.cfg.API == V1 {
		if !s.cfg.Product.CreateDB {
			return nil
		}
		return s.createDatabase(ctx, s.cfg.DB)
	}
	ver, err := s.ping(ctx)
	if err != nil {
		return err
	}
	// InfluxDB 1.8+: the bucket is DB or DB/RP.
	db, _, _ := strings.Cut(s.cfg.Bucket, "/")
	switch majorVersion(ver) {
	case 1:
		return s.createDatabase(ctx, db)
	case 2:
		return s.createBucket(ctx)
	case 0: // no version (1.x built from source says "unknown")
		found, err := s.createBucketIfAPI(ctx)
		if found || err != nil {
			return err
		}
		return s.createDatabase(ctx, db)
	}
	return nil // 3.x creates databases on the first write
}

// majorVersion parses X-Influxdb-Version ("1.8.10", "v2.7.4", "3.0.1");
// 0 when unknown.
func majorVersion(v string) int {
	v = strings.TrimPrefix(v, "v")
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// createBucketIfAPI creates the bucket when the server has the 2.x
// buckets API; found reports whether it has.
func (s *Sink) createBucketIfAPI(ctx context.Context) (found bool, err error) {
	err = s.createBucket(ctx)
	var se *StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
		return false, nil
	}
	return true, err
}

// createDatabase runs CREATE DATABASE (a no-op when it exists). A user
// without admin rights cannot run it; then an existing database is fine.
func (s *Sink) createDatabase(ctx context.Context, db string) error {
	err := s.influxQL(ctx, "CREATE DATABASE "+quoteIdent(db))
	if err == nil || sinks.ClassOf(err) != sinks.Rejected {
		return err
	}
	if ok, err2 := s.databaseExists(ctx, db); err2 == nil && ok {
		return nil
	}
	return err
}

func (s *Sink) databaseExists(ctx context.Context, db string) (bool, error) {
	names, err := s.databases(ctx)
	return slices.Contains(names, db), err
}

// databases are the databases SHOW DATABASES lists.
func (s *Sink) databases(ctx context.Context) ([]string, error) {
	rows, err := s.showQuery(ctx, "SHOW DATABASES")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, v := range rows {
		if len(v) > 0 {
			if name, ok := v[0].(string); ok {
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// influxQL runs one InfluxQL statement through POST /query and returns
// the statement's error, if any, as rejected.
func (s *Sink) influxQL(ctx context.Context, stmt string) error {
	form := url.Values{"q": {stmt}}.Encode()
	resp, err := s.do(ctx, http.MethodPost, "/query", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		return fmt.Errorf("cannot run %s on %s: %w", stmt, s.cfg.String(), err)
	}
	defer resp.Body.Close()
	var out struct {
		Error   string `json:"error"`
		Results []struct {
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return sinks.NewError(sinks.Other, false, fmt.Errorf("cannot read the answer to %s from %s: %w", stmt, s.cfg.String(), err))
	}
	for _, r := range out.Results {
		if r.Error != "" {
			out.Error = r.Error
		}
	}
	if out.Error != "" {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("%s on %s: %s", stmt, s.cfg.String(), out.Error))
	}
	return nil
}

// createBucket creates the bucket through the InfluxDB 2.x API: look it
// up, find the organisation's id, create it with infinite retention.
func (s *Sink) createBucket(ctx context.Context) error {
	q := url.Values{"name": {s.cfg.Bucket}}
	if s.cfg.Org != "" {
		q.Set("org", s.cfg.Org)
	}
	var buckets struct {
		Buckets []struct {
			Name string `json:"name"`
		} `json:"buckets"`
	}
	if err := s.getJSON(ctx, "/api/v2/buckets?"+q.Encode(), &buckets); err != nil {
		return fmt.Errorf("cannot look up bucket %q: %w", s.cfg.Bucket, err)
	}
	for _, b := range buckets.Buckets {
		if b.Name == s.cfg.Bucket {
			return nil
		}
	}
	if s.cfg.Org == "" {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("bucket %q does not exist; give ?org= to create it", s.cfg.Bucket))
	}
	var orgs struct {
		Orgs []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"orgs"`
	}
	if err := s.getJSON(ctx, "/api/v2/orgs?"+url.Values{"org": {s.cfg.Org}}.Encode(), &orgs); err != nil {
		return fmt.Errorf("cannot look up organisation %q: %w", s.cfg.Org, err)
	}
	id := ""
	for _, o := range orgs.Orgs {
		if o.Name == s.cfg.Org {
			id = o.ID
		}
	}
	if id == "" {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("organisation %q not found", s.cfg.Org))
	}
	body, _ := json.Marshal(map[string]any{"name": s.cfg.Bucket, "orgID": id, "retentionRules": []any{}})
	resp, err := s.do(ctx, http.MethodPost, "/api/v2/buckets", "application/json", bytes.NewReader(body))
	if err != nil {
		if se := (*StatusError)(nil); errors.As(err, &se) && se.StatusCode == http.StatusUnprocessableEntity {
			return nil // created meanwhile by another process
		}
		return fmt.Errorf("cannot create bucket %q: %w", s.cfg.Bucket, err)
	}
	resp.Body.Close()
	s.log.Info("created bucket")
	return nil
}

// getJSON GETs path and decodes a 2xx answer into out.
func (s *Sink) getJSON(ctx context.Context, path string, out any) error {
	resp, err := s.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return sinks.NewError(sinks.Other, false, fmt.Errorf("cannot decode %s: %w", path, err))
	}
	return nil
}

// do sends a management request (not a write) with the sink's
// credentials and returns the response of a 2xx answer; anything else is
// a classified error. Management requests are idempotent.
func (s *Sink) do(ctx context.Context, method, path, ctype string, body io.Reader) (*http.Response, error) {
	return s.doWithin(ctx, 30*time.Second, method, path, ctype, body)
}

// doWithin is do bounded by limit (0: by the caller's context only) and
// ?timeout=.
func (s *Sink) doWithin(ctx context.Context, limit time.Duration, method, path, ctype string, body io.Reader) (*http.Response, error) {
	if s.cfg.Timeout > 0 && (limit == 0 || s.cfg.Timeout < limit) {
		limit = s.cfg.Timeout
	}
	cancel := context.CancelFunc(func() {})
	if limit > 0 {
		ctx, cancel = context.WithTimeout(ctx, limit)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.cfg.baseURL()+path, body)
	if err != nil {
		cancel()
		return nil, sinks.NewError(sinks.Other, false, err)
	}
	req.Header.Set("User-Agent", userAgent)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		err = sinks.ClassifyHTTPTransport(ctx, err, true)
		cancel()
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		eb := readError(resp)
		resp.Body.Close()
		cancel()
		return nil, classifyStatus(resp.StatusCode, resp.Header, eb, 0, true)
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// quoteIdent quotes an InfluxQL identifier.
func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
