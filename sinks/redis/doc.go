// Package redis is the sink for Redis-protocol key-value stores (Redis,
// Valkey, KeeWiDB, Kvrocks, Pika, Dragonfly): a single server's batches
// on RESP connections of its own (resp.go), clusters, sentinels and the
// sink's checks on go-redis/v9. It executes
// the YCSB operations of a KV batch (sources/kv) as one pipeline per
// batch, storing each record as the configured data type:
//
//	string  SET key field0..fieldN packed / GET; one field: SETRANGE / GETRANGE
//	hash    HSET key field0 v0 ... / HMGET key field0 ...; one field: HSET / HGET
//	set     DEL + SADD key v0 ... / SMEMBERS; one field: SPOP + SADD / SRANDMEMBER
//	zset    DEL + ZADD key 0 v0 1 v1 ... / ZRANGE key 0 -1; one field:
//	        ZREMRANGEBYSCORE key f f + ZADD key f v / ZRANGEBYSCORE key f f
//
// Inserts also add the key to YCSB's scan index, the sorted set
// KEY_PREFIX + "_indices" scored by record number; a scan reads the index
// from its record on, then the records it found (a second round trip).
//
// URLs:
//
//	redis://[user:password@]host[:6379][/db][?param=...]
//	rediss://...                                  TLS
//	redis-cluster://[user:password@]host:port,host:port[?tls=true&...]
//	redis-sentinel://[user:password@]host:26379,host:26379/master[/db][?sentinel_password=...]
//
// The built-in target redis://embedded, an in-process server, is package
// embedded, which opens this sink on it; to this package "embedded" is a
// host name.
//
// Parameters: cleanup (delete KEY_PREFIX* at exit, default false), index
// (maintain the scan index, default true), db, tls, skip_verify, protocol
// (2 or 3, default 2), dial_timeout, read_timeout, write_timeout,
// pool_size (default workers + 4), client_name, addr (more cluster seeds
// or sentinels), sentinel_username, sentinel_password. A password in the
// URL wins over SOAKD_<W>_PASSWORD. Failed writes are retried by the
// engine, never by the client.
//
// Registered in cmd/soakd as (Open there routes redis://embedded to
// package embedded first):
//
//	r.Add(sinks.Entry{Schemes: redis.Schemes, Kinds: []sources.Kind{sources.KV}, Open: redis.Open, Check: redis.Check})
package redis
