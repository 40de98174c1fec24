package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// runGroupCLI runs "strand <args…> --brokers addr" in-process and returns
// what it printed.
func runGroupCLI(t *testing.T, ctx context.Context, addr string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--brokers", addr))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func groupLagJSON(t *testing.T, ctx context.Context, addr, group string) groupLagReport {
	t.Helper()
	out, err := runGroupCLI(t, ctx, addr, "group", "lag", group, "-o", "json")
	if err != nil {
		t.Fatalf("group lag: %v\n%s", err, out)
	}
	var rep groupLagReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("group lag json: %v\n%s", err, out)
	}
	return rep
}

// TestGroupCommands runs strand group list|describe|lag|seek against an
// embedded broker: lag per partition with a total, replay by seek (lag
// jumps back up), and seek refused while the group has a live member.
func TestGroupCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), GroupInitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 10, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 4, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "billing", commit); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}

	out, err := runGroupCLI(t, ctx, addr, "group", "lag", "billing")
	if err != nil {
		t.Fatalf("group lag: %v\n%s", err, out)
	}
	t.Logf("strand group lag billing:\n%s", out)
	for _, want := range []string{"TOPIC", "PARTITION", "END", "COMMITTED", "LAG", "TIME LAG", "orders", "TOTAL"} {
		if !strings.Contains(out, want) {
			t.Errorf("group lag output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !strings.HasPrefix(lines[len(lines)-1], "TOTAL") || !strings.HasSuffix(strings.TrimSpace(lines[len(lines)-1]), "6") {
		t.Errorf("total line: %q", lines[len(lines)-1])
	}
	rep := groupLagJSON(t, ctx, addr, "billing")
	if rep.Total != 6 || len(rep.Partitions) != 2 || rep.Partitions[0].Lag != 0 || rep.Partitions[1].Committed != 4 || rep.Partitions[1].End != 10 {
		t.Fatalf("lag: %+v", rep)
	}
	// Time lag: read from the record at the commit (known, not -1) where the
	// group lags; zero where it is caught up.
	if p0, p1 := rep.Partitions[0].TimeLagSeconds, rep.Partitions[1].TimeLagSeconds; p0 != 0 || p1 < 0 {
		t.Fatalf("time lag: caught-up partition %v, lagging partition %v", p0, p1)
	}

	out, err = runGroupCLI(t, ctx, addr, "group", "list", "-o", "json")
	var listed []groupSummary
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].Group != "billing" || listed[0].State != "Empty" {
		t.Fatalf("group list: %v %+v\n%s", err, listed, out)
	}
	out, err = runGroupCLI(t, ctx, addr, "group", "describe", "billing")
	if err != nil || !strings.Contains(out, "Empty") || !strings.Contains(out, "MEMBERS") {
		t.Fatalf("group describe: %v\n%s", err, out)
	}
	t.Logf("strand group describe billing:\n%s", out)

	// Replay = seek: back to the start, and lag jumps back up.
	out, err = runGroupCLI(t, ctx, addr, "group", "seek", "billing", "--to-earliest")
	if err != nil || !strings.Contains(out, "FROM") {
		t.Fatalf("seek: %v\n%s", err, out)
	}
	if rep := groupLagJSON(t, ctx, addr, "billing"); rep.Total != 20 {
		t.Fatalf("lag after seek to earliest: %+v", rep)
	}
	if out, err := runGroupCLI(t, ctx, addr, "group", "seek", "billing", "--topic", "orders", "--partition", "1", "--to-offset", "7"); err != nil {
		t.Fatalf("seek to offset: %v\n%s", err, out)
	}
	if rep := groupLagJSON(t, ctx, addr, "billing"); rep.Total != 13 || rep.Partitions[1].Committed != 7 {
		t.Fatalf("lag after seek to 7: %+v", rep)
	}
	if out, err := runGroupCLI(t, ctx, addr, "group", "seek", "billing", "--to-latest", "--dry-run"); err != nil || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if rep := groupLagJSON(t, ctx, addr, "billing"); rep.Total != 13 {
		t.Fatalf("dry run committed: %+v", rep)
	}
	if _, err := runGroupCLI(t, ctx, addr, "group", "seek", "billing"); exitCode(err) != exitUsage {
		t.Fatalf("seek without a target: %v (exit %d)", err, exitCode(err))
	}

	// A group with a live member: seek is refused, with a clear message.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < 20; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		n += fs.NumRecords()
	}
	out, err = runGroupCLI(t, ctx, addr, "group", "seek", "live", "--topic", "orders", "--to-earliest")
	if err == nil || !strings.Contains(err.Error(), "live member") || exitCode(err) != exitError {
		t.Fatalf("seek with a live member: %v\n%s", err, out)
	}
	t.Logf("strand group seek live: %v", err)
	out, _ = runGroupCLI(t, ctx, addr, "group", "describe", "live")
	t.Logf("strand group describe live:\n%s", out)
	out, err = runGroupCLI(t, ctx, addr, "group", "describe", "live", "-o", "json")
	var described []groupDescription
	if err != nil || json.Unmarshal([]byte(out), &described) != nil || len(described) != 1 || described[0].State != "Stable" ||
		len(described[0].Members) != 1 || len(described[0].Members[0].Assigned["orders"]) != 2 {
		t.Fatalf("describe live: %v %+v\n%s", err, described, out)
	}
	consumer.Close() // leaves the group
	if out, err := runGroupCLI(t, ctx, addr, "group", "seek", "live", "--topic", "orders", "--to-earliest"); err != nil {
		t.Fatalf("seek after the member left: %v\n%s", err, out)
	}
}

// TestGroupDescribeConsumerGroup: strand group describe shows a KIP-848
// group (type, epochs, assignor, members with current and target
// partitions) and, with --history, its rebalances from the console.
func TestGroupDescribeConsumerGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		ConsoleAddr: "127.0.0.1:0", GroupConsumerHeartbeatInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 6, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	var members []*kgo.Client
	for range 2 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("orders"),
			kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		go func() {
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		members = append(members, cl)
	}
	// describe returns nil until the group exists (the first join may not
	// have reached the broker yet).
	describe := func() []groupDescription {
		out, err := runGroupCLI(t, ctx, addr, "group", "describe", "g848", "-o", "json", "--history", "--console", b.ConsoleAddr())
		var d []groupDescription
		if err != nil && strings.Contains(err.Error(), "no group") {
			return nil
		}
		if err != nil || json.Unmarshal([]byte(out), &d) != nil || len(d) != 1 {
			t.Fatalf("describe: %v\n%s", err, out)
		}
		return d
	}
	var d []groupDescription
	for d = describe(); d == nil || d[0].State != "Stable" || len(d[0].Members) != 2; d = describe() {
		if ctx.Err() != nil {
			t.Fatalf("never stable: %+v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	g := d[0]
	if g.Type != "consumer" || g.Assignor != "uniform" || g.Epoch < 2 || len(g.History) < 2 {
		t.Fatalf("described: %+v", g)
	}
	for _, m := range g.Members {
		if len(m.Assigned["orders"]) != 3 || m.MemberEpoch != g.AssignmentEpoch || m.ClientID != "kgo" || m.ClientHost != "/127.0.0.1" {
			t.Fatalf("member: %+v", m)
		}
	}
	last := g.History[len(g.History)-1]
	if last.Moved != 3 || !strings.Contains(last.Reason, "joined") || last.HandedOver != 3 || last.MaxUnownedSeconds < 0 {
		t.Fatalf("second join moved %d partitions (%q), want 3", last.Moved, last.Reason)
	}
	out, err := runGroupCLI(t, ctx, addr, "group", "describe", "g848", "--history", "--console", b.ConsoleAddr())
	if err != nil || !strings.Contains(out, "uniform") || !strings.Contains(out, "REBALANCE AT") {
		t.Fatalf("table: %v\n%s", err, out)
	}
	t.Logf("strand group describe g848 --history:\n%s", out)
	out, err = runGroupCLI(t, ctx, addr, "group", "list", "-o", "json")
	var listed []groupSummary
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].Type != "consumer" || listed[0].State != "Stable" {
		t.Fatalf("list: %v %+v\n%s", err, listed, out)
	}
	// The movement preview of a third member joining, under each assignor.
	out, err = runGroupCLI(t, ctx, addr, "group", "assign", "g848", "--preview", "--add", "1", "-o", "json")
	var rows []movePreview
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 6 {
		t.Fatalf("assign --preview: %v\n%s", err, out)
	}
	byName := map[string]movePreview{}
	for _, r := range rows {
		byName[r.Assignor] = r
	}
	// 2 → 3 members on 6 partitions: the newcomer takes 2; uniform takes
	// one from each member and nothing else moves.
	if u := byName["KIP-848 uniform"]; u.Moved != 2 || u.Revoked != 2 || u.Eager {
		t.Fatalf("uniform preview: %+v", u)
	}
	if r := byName["classic range"]; !r.Eager || r.Moved < 2 {
		t.Fatalf("classic range preview: %+v", r)
	}
	out, err = runGroupCLI(t, ctx, addr, "group", "assign", "g848", "--preview", "--add", "1")
	if err != nil || !strings.Contains(out, "KIP-848 uniform") {
		t.Fatalf("assign --preview table: %v\n%s", err, out)
	}
	t.Logf("strand group assign g848 --preview --add 1:\n%s", out)
	if _, err := runGroupCLI(t, ctx, addr, "group", "describe", "nope"); err == nil || !strings.Contains(err.Error(), "no group") {
		t.Fatalf("describe of an unknown group: %v", err)
	}
	// Lag of a consumer group (DescribeGroups v6 answers GROUP_ID_NOT_FOUND
	// for it, where kadm's Lag stops): every partition, its member, and
	// the records produced but not consumed-and-committed.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	for i := range 60 {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var rep groupLagReport
	for {
		out, err = runGroupCLI(t, ctx, addr, "group", "lag", "g848", "-o", "json")
		if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Partitions) != 6 {
			t.Fatalf("lag of a consumer group: %v\n%s", err, out)
		}
		if rep.Total == 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // autocommit catches up
	}
	for _, p := range rep.Partitions {
		if p.Member == "" || p.Error != "" || p.Lag != 0 {
			t.Fatalf("lag of a consumer group: %+v", rep)
		}
	}
	if rep.State != "Stable" {
		t.Fatalf("lag state: %+v", rep)
	}
}
