package bench

import "fmt"

// Kinds of cost table: which targets a table is read against.
const (
	// KindProduce is page-cache produce: issue 40's CPU per GB against
	// kfake and the null broker, and replication's cost (strand-rf3).
	KindProduce = "produce"
	// KindConsume is plain fetches replaying the log (fan-out).
	KindConsume = "consume"
	// KindDurable is produce with an fsync before every acknowledgement:
	// Strand is to be ahead of every peer.
	KindDurable = "durable"
)

// Memory states of the produce table: a VM's first write to a guest page
// costs a hypervisor fault inside write(2), so whether the page cache lands
// in memory the guest has used before moves the broker's CPU per GB more
// than anything the broker does (docs/BENCHMARKS.md, "First touch"). The
// suite reports both.
const MemoryUntouched = "without pre-touch"

// MemoryTouched names the state after gib GiB were written once and
// released.
func MemoryTouched(gib int) string { return fmt.Sprintf("after a %d GiB pre-touch", gib) }

// SuiteTouchGiB is how much memory the suite touches when not told: enough
// on this 23.5 GiB machine for every table after the touch to write into
// pages the guest has backed before.
const SuiteTouchGiB = 16

// CostSuite plans the server-cost suite from o's runs, durations,
// binaries and directory: its tables in the order they run, then the
// spread table, which runs last. With touchGiB > 0 the produce table runs
// twice on the same options — first on the machine as it is (what a
// user's machine sees), then, after touchGiB GiB are touched (the table
// whose TouchBefore is set), on pre-touched memory — and the tables after
// it run on pre-touched memory too.
func CostSuite(o CostOptions, touchGiB int) ([]CostTable, SpreadTable) {
	produce, consume, durable := o, o, o
	produce.Workload, produce.Peers, produce.Conns = "produce", []string{"strand", "kfake", "null", "strand-rf3"}, []int{1, 4, 8, 16}
	consume.Workload, consume.Peers, consume.Conns = "consume", []string{"strand", "kfake"}, []int{1, 4, 16}
	durable.Workload, durable.Peers, durable.Conns, durable.Fsync = "produce", []string{"strand", "kfake", "jetstream"}, []int{1, 4, 8, 16, 64}, true
	durable.RecordsPerBatch, durable.InFlight = 1, 1
	tables := []CostTable{
		{Title: "Produce (§1): acks=all, page cache", Kind: KindProduce, Memory: MemoryUntouched, Options: produce},
		{Title: "Consume and fan-out (§1, §4): N connections each replaying the log with plain fetches", Kind: KindConsume, Options: consume},
		{Title: "Durable produce (§2): an fsync before every acknowledgement, one 1 KB record per request, one in flight per connection", Kind: KindDurable, Options: durable},
	}
	if touchGiB > 0 {
		untouched := CostTable{Title: "Produce (§1) without memory pre-touch: acks=all, page cache, the machine as it is", Kind: KindProduce, Memory: MemoryUntouched, Options: produce}
		tables[0].Title += ", after the pre-touch"
		tables[0].Memory, tables[0].TouchBefore = MemoryTouched(touchGiB), touchGiB
		tables = append([]CostTable{untouched}, tables...)
	}
	// §3's spread without the client's cost: the produce table's shape
	// against the same request bytes as batches of 10 records (what
	// franz-go builds at 10,000 partitions with its default buffer) over
	// 10,000 partitions, 25 to a request. At 1/4/8 connections, not 16:
	// each wide run creates a 10,000-partition topic on a fresh data
	// directory (~30 s here), so every connection count costs the suite
	// minutes.
	spread := SpreadTable{Title: "Produce spread over 10,000 partitions (§3): the broker's share, without the client", Narrow: produce, Wide: produce}
	spread.Narrow.Peers, spread.Wide.Peers = []string{"strand"}, []string{"strand"}
	spread.Narrow.Conns, spread.Wide.Conns = []int{1, 4, 8}, []int{1, 4, 8}
	spread.Wide.Partitions, spread.Wide.RecordsPerBatch = 10000, 10
	spread.Wide.PartitionsPerRequest = max(produce.RecordsPerBatch/10, 1)
	for spread.Wide.Partitions%spread.Wide.PartitionsPerRequest != 0 {
		spread.Wide.PartitionsPerRequest-- // requests cycle over whole groups of partitions
	}
	return tables, spread
}
