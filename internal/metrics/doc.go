// Package metrics exposes a Strand broker to Prometheus: what the broker
// holds (per-partition log start, end offset, high watermark and size;
// per-topic records and bytes in and out; records validated, quarantined to
// the dead-letter topic and redriven; consumer-group lag per partition and
// in total), what the wire server does (requests and their latency per
// API key; open connections), and the Go runtime and process.
//
// Broker state is read at scrape time by a pull collector, so the broker
// keeps no metric objects and the produce and fetch paths only bump atomic
// counters (broker.TopicStats). Request metrics arrive through
// kafka.Observer, which the wire server calls after every request: kafka
// defines that interface and never imports this package, which sits above
// both kafka and broker in the layering.
//
// Metric names (all prefixed strand_):
//
//	partition_log_start_offset{topic,partition}   gauge
//	partition_log_end_offset{topic,partition}     gauge: the next offset to be written
//	partition_high_watermark{topic,partition}     gauge
//	partition_size_bytes{topic,partition}         gauge: bytes of segments on disk
//	topic_partitions{topic}                       gauge
//	topic_records_in_total{topic}                 counter: records appended
//	topic_bytes_in_total{topic}                   counter: record-batch bytes appended
//	topic_records_out_total{topic}                counter: records sent to consumers
//	topic_bytes_out_total{topic}                  counter: record-batch bytes sent
//	topic_records_validated_total{topic}          counter: records judged by strand.validation
//	dlq_quarantined_total{topic}                  counter: invalid records sent to the topic's DLQ
//	topic_records_rejected_total{topic}           counter: invalid records whose batch was refused (action=reject)
//	dlq_redriven_total{topic}                     counter: DLQ records redriven (by anyone)
//	group_lag{group,topic,partition}              gauge: end − committed offset
//	group_total_lag{group}                        gauge: Σ group_lag (DESIGN.md invariant 3)
//	requests_total{api}                           counter
//	request_errors_total{api}                     counter: requests that closed their connection
//	request_duration_seconds{api}                 histogram
//	connections                                   gauge: open client connections
//
// A Metrics is safe for concurrent use. It must never change broker state:
// every read it makes is one a client could make too.
package metrics
