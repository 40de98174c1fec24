// Package kafka is Strand's Kafka wire server: the listener, the
// per-connection read and write loops, request framing and decoding, and one
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
// before any of it is read. A frame's buffer grows only as its bytes arrive
// (in bounded chunks), so a size field alone can never make the server
// allocate; kmsg bounds every array it allocates by the bytes remaining.
// A frame that cannot be parsed, an unknown API key, or a version this
// server does not serve closes that connection, with the reason logged, as
// Kafka does; ApiVersions at an unknown version is answered with
// UNSUPPORTED_VERSION in the v0 format, so clients can downgrade.
//
// # Concurrency
//
// Each connection has one read goroutine, which reads a frame, runs its
// handler and encodes the response, and one write goroutine, which writes
// encoded responses in the order requests arrived. Handling requests of one
// connection one at a time is Kafka's own contract (it mutes a connection
// while a request is in flight); it is also what keeps a producer's
// pipelined batches to one partition in sequence order. Pipelining still
// pays: the next request is decoded while the previous response is written.
// Within one produce request, batches for distinct partitions are appended
// concurrently (at most maxParallelAppends at a time; sequentially if a
// partition is named twice), and the handler returns only when all are done.
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
