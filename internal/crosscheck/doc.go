// Package crosscheck holds tests that compare query targets with each
// other: the same TSBS query types, run as SQL against PostgreSQL and as
// InfluxQL against InfluxDB 1.8 over the same data, must answer the same
// rows. It has no code of its own.
package crosscheck
