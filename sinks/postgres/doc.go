// Package postgres is the sink for databases that speak the PostgreSQL
// wire protocol: PostgreSQL, TimescaleDB, KWDB (KaiwuDB),
// MatrixDB/Greenplum and CockroachDB, selected by postgres:// and
// postgresql:// target URLs. It is built on jackc/pgx/v5: a pgxpool sized
// to the workload's workers, and pgconn underneath for the writes.
//
// Rows are encoded straight from the batch's typed columns into reused
// buffers in PostgreSQL's binary formats and sent with COPY (the
// default), multi-row INSERT or INSERT ... SELECT FROM unnest, one round
// trip per table (COPY) or per batch (INSERT, unnest). Tables are created
// on Prepare with the DDL of the URL's dialect. See README.md for every
// URL parameter.
//
//	u, _ := url.Parse("postgres://soakd@db:5432/bench?sslmode=require&insert=copy&dedup=true")
//	s, err := postgres.Open(ctx, u, sinks.Options{Kind: sources.Series, Workers: 4, Schemas: src.Schemas()})
//	if err != nil { ... }               // bad URL: nothing was sent
//	err = s.(sinks.Preparer).Prepare(ctx) // CREATE TABLE IF NOT EXISTS ...
//	n, err := s.Write(ctx, batch)        // one COPY per table
//	_ = s.Close(ctx)
package postgres
