// Package group owns Strand's consumer-group coordinator for Kafka's classic
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups,
// ListGroups, DeleteGroups, OffsetCommit, OffsetFetch, OffsetDelete): group
// membership, generations, and committed offsets, persisted as records of
// the compacted internal topic __consumer_offsets through a Store.
//
// It must never speak the wire protocol: requests and responses are this
// package's own structs, and results are a Code whose values equal Kafka's
// error codes, so internal/kafka translates both ways by field copies. It
// does not compute assignments either: in the classic protocol the leader
// member does that, client-side.
//
// # States
//
// A group moves through Kafka's states:
//
//	           first member joins
//	+-------+ ---------------------> +--------------------+ <-------------------+
//	| Empty |                        | PreparingRebalance |                     |
//	+-------+ <--------------------- +--------------------+                     |
//	    |      join phase ends with     |                                       |
//	    |      no member left           | all members rejoined,                 |
//	    |                               | or the rebalance timeout              |
//	    | DeleteGroups                  v                                       |
//	    |                    +---------------------+   a member joins, leaves,  |
//	    v                    | CompletingRebalance | -------------------------->+
//	+------+                 +---------------------+   expires; no leader sync  |
//	| Dead |                    |                      in time; store failed    |
//	+------+                    | the leader's SyncGroup is stored              |
//	                            v                                               |
//	                       +--------+   a member joins, leaves, expires,        |
//	                       | Stable | ----------------------------------------->+
//	                       +--------+   or rejoins with new protocols
//
// In each state:
//
//   - Empty: no members (maybe committed offsets). A member's join starts a
//     join phase that first waits InitialRebalanceDelay
//     (group.initial.rebalance.delay.ms) for more members, and keeps
//     waiting while they arrive, up to the rebalance timeout.
//   - PreparingRebalance (the join phase): every known member must send
//     JoinGroup again. It ends when all have, or at the largest rebalance
//     timeout, dropping dynamic members that did not. Heartbeats answer
//     REBALANCE_IN_PROGRESS so members know to rejoin.
//   - CompletingRebalance (the sync phase): the generation grew by one and a
//     protocol was chosen; the leader got every member's metadata in its
//     JoinResponse and must send the assignments in SyncGroup. Followers'
//     SyncGroups wait for it.
//   - Stable: every member has its assignment; heartbeats keep sessions
//     alive. A static member (KIP-345) that restarts takes its place back
//     without a rebalance.
//   - Dead: deleted; the actor exits.
//
// # Concurrency
//
// Each group is an actor: one goroutine (group.run) owns all of the group's
// state and its timers, fed functions through an unbuffered channel. The
// Coordinator only maps group ids to actors, under a mutex. Every exported
// method is safe for concurrent use; it hands its work to the group's actor
// and waits for the answer, honouring ctx. Timers (from the injectable
// Clock) also only hand a function to the actor, and every timer carries a
// sequence number so that a timer that fires after its purpose is gone does
// nothing. Store appends run on the actor, so a group's state change and
// its record are one step; Close cancels them.
//
// # Persistence
//
// Offset commits and group metadata (generation, protocol, leader, members
// with their subscriptions and assignments) are written with Kafka's own
// __consumer_offsets key and value schemas (see Store). New replays the
// Store: a group with members comes back Stable in its generation, with
// fresh session timers; one without comes back Empty with its offsets. A
// record it cannot read is skipped with an error logged, as Kafka's
// coordinator ignores record types it does not know (KIP-915), so one bad
// record never keeps the other groups from loading.
// Offsets expire after OffsetsRetention without a consumer (expire.go).
//
// # Deviations from Apache Kafka
//
//   - When a member rejoins with new protocols, its own old protocols do not
//     count against the new ones (Kafka's supportsProtocols counts them).
//   - Ties in protocol selection go to the earliest-joined member's
//     preference (Kafka: arbitrary).
//   - A static leader replaced while Stable gets the member list back, as in
//     Kafka before KIP-814; SkipAssignment is not implemented.
//   - A group that never completed a rebalance and has no members, pending
//     members or offsets is dropped at once rather than listed as Empty.
package group
