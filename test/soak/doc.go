// Package soak holds Strand's crash soak: it runs the real `strand serve`
// binary, kills it with SIGKILL again and again while an idempotent Kafka
// producer keeps writing through every restart, and then checks that every
// acknowledged record is in the log exactly once, at the offset the producer
// was told. It has no code of its own outside its test.
//
//	go test ./test/soak                                  # 3 kills (part of go test ./...)
//	STRAND_SOAK_KILLS=200 go test ./test/soak -timeout 60m   # a long soak
package soak
