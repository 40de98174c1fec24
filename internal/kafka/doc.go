// Package kafka is Strand's Kafka wire server: the listener, the
// per-connection read, handle and write loops, request framing and decoding, and one
// handler per API key (00_produce.go, 01_fetch.go, …) translating kmsg
// requests into broker calls and broker results into kmsg responses.
//
// # Framing
//
// Every request and response is a size-prefixed frame:
//
//	request:   | size int32 | api key int16 | api version int16 | correlation id int32 |
//	           | client id: int16 length + bytes (-1: null)                           |
//	           | tagged fields (uvarint count, …) — only in flexible versions         |
//	           | body (kmsg.Request.ReadFrom)                                         |
//
//	response:  | size int32 | correlation id int32 |
//	           | tagged fields — flexible versions, except ApiVersions (always v0)    |
//	           | body (kmsg.Response.AppendTo)                                        |
//
// A frame larger than socket.request.max.bytes (default 100 MiB) is refused
// before any of it is read. Frames are read into buffers pooled server-wide
// by power-of-two size class (framepool.go); when no pooled buffer is free
// for a frame, its buffer grows only as its bytes arrive (fourfold per step
// from 256 KiB), so a size field alone can never make the server allocate; kmsg bounds every array it allocates by the bytes remaining.
// A frame that cannot be parsed, an unknown API key, or a version this
// server does not serve closes that connection, with the reason logged, as
// Kafka does; ApiVersions at an unknown version is answered with
// UNSUPPORTED_VERSION in the v0 format, so clients can downgrade.
//
// # Concurrency
//
// Each connection has two goroutines: the reader reads and decodes a
// frame, runs its request and encodes the response, one request at a time
// in the order they arrived (which keeps a producer's pipelined batches to
// one partition in sequence order, as Kafka's one-request-at-a-time
// channel does); the writer writes the responses in that order. A small
// response with nothing ahead of it is written by the reader; a large one
// goes to the writer, so that its write overlaps the next request. Only a
// produce's wait for its commit (its followers, or an fsync) is left to the
// writer, which waits for it in its turn (deferred.go), so the reader
// appends the connection's next request meanwhile; Kafka mutes a
// connection until the answer is sent, which costs a producer one commit
// wait per request. A connection holds at most one request frame.
// Within one produce request, batches for distinct partitions are appended
// concurrently (at most maxParallelAppends at a time; sequentially if a
// partition is named twice); the answer is complete once all are committed.
// Handlers are safe for concurrent use across connections; all shared state
// lives in the broker.
//
// Fetch responses are written with one writev: kmsg encodes the response
// around small markers, and the log's bytes are spliced in place of the
// markers (splice.go), so record batches are never copied into a response
// buffer.
//
// # What it must never do
//
// kafka never touches storage directly and never re-encodes record batches:
// produce hands the producer's bytes to the broker, fetch returns the bytes
// the log stored. A misbehaving client can close only its own connection.
package kafka
