// Package console is Strand's web console and its JSON HTTP API: server-
// rendered pages (html/template, no JavaScript) for the broker's topics and
// their partitions, the records of a partition or a topic (from an offset
// or a timestamp, filtered over a bounded scan, with quarantined offsets
// linked to their dead letters), consumer groups with who holds which
// partition, their lag and a lag chart, and each topic's dead letters by
// reason. Every page has a JSON twin under /api/v1 built from the same view
// model, so what a person sees and what a script reads cannot drift apart.
//
// Who reaches the listener is decided in front of it (internal/httpauth:
// TLS, and authentication beyond loopback); with an authorizer, every
// answer is for the request's principal — only what it may describe is
// shown (authz.go). Actions — create, delete or configure a topic, produce
// a test record, reset or delete a group, redrive a DLQ — are POST forms
// allowed only from a loopback client carrying this process's CSRF token
// from a same-origin page (guard.go), and with an authorizer only to a
// principal the matching Kafka API would allow.
//
// Its only state is the CSRF token and a short in-memory history of each
// group's lag, sampled every 10 s until the broker closes (groups.go); it
// is safe for concurrent use. It never speaks the Kafka wire protocol or
// reaches below the broker's API. docs/CONSOLE.md records its bounds.
package console
