// Package console is Strand's web console and its JSON HTTP API: server-
// rendered pages (html/template, no JavaScript) for the broker's topics and
// their partitions, the records of a partition from any offset (replay by
// seek, in a browser), consumer groups with their members and lag, and each
// topic's ingest and dead-letter counters. Every page has a JSON twin under
// /api/v1 built from the same view model, so what a person sees and what a
// script reads cannot drift apart.
//
// The console only reads: it never produces, commits, seeks or changes a
// config (the strand CLI and Kafka clients do that), so exposing it can leak
// data but never change it. It owns no state and must never speak the Kafka
// wire protocol or reach below the broker's API.
package console
