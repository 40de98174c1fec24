// kafkajs (pure JavaScript, its own protocol code) against strand serve:
// admin, an idempotent gzip producer, a consumer group, committed offsets.
// Prints "ok kafkajs: …" / "FAIL kafkajs: …" lines, as run.sh expects.
//
//   node test/interop/kafkajs/kafkajs.js PORT
'use strict';
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const { Kafka, logLevel, CompressionTypes } = require('kafkajs');

const broker = '127.0.0.1:' + process.argv[2];
const kafka = new Kafka({ clientId: 'strand-interop', brokers: [broker], logLevel: logLevel.ERROR });
const topic = 'interop-kafkajs';
const group = 'interop-kafkajs-group';
const N = 1000;
let failed = 0;
const ok = (msg) => console.log('ok kafkajs: ' + msg);
const fail = (msg) => { failed++; console.log('FAIL kafkajs: ' + msg); };
const check = (cond, msg, detail) => (cond ? ok(msg) : fail(msg + (detail ? ' (' + detail + ')' : '')));

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  check(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true }), 'admin created a 3-partition topic');
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  check(md.topics[0].partitions.length === 3, 'metadata shows 3 partitions', JSON.stringify(md.topics[0].partitions.length));

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const acked = [];
  for (let b = 0; b < N / 100; b++) {
    const messages = [];
    for (let i = b * 100; i < (b + 1) * 100; i++) {
      messages.push({ key: 'key-' + (i % 37), value: 'value-' + i, headers: { seq: String(i) } });
    }
    const res = await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages });
    acked.push(...res);
  }
  check(acked.every((r) => r.errorCode === 0), 'idempotent gzip producer: every batch acknowledged');

  const offsets = await admin.fetchTopicOffsets(topic);
  const total = offsets.reduce((s, p) => s + Number(p.high) - Number(p.low), 0);
  check(total === N, 'high watermarks add up to what was produced', 'total ' + total);

  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, rebalanceTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Map(); // seq -> {partition, offset, key}
  const keyPartition = new Map();
  let misplaced = 0, bad = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('consumed ' + seen.size + ' of ' + N + ' in 60s')), 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const seq = message.headers.seq.toString();
        const key = message.key.toString();
        if (message.value.toString() !== 'value-' + seq || key !== 'key-' + (Number(seq) % 37)) bad++;
        if (keyPartition.has(key) && keyPartition.get(key) !== partition) misplaced++;
        keyPartition.set(key, partition);
        seen.set(seq, { partition, offset: message.offset });
        if (seen.size === N) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  check(seen.size === N, 'consumer group read every record once', seen.size + ' distinct');
  check(bad === 0, 'keys, values and headers intact', bad + ' bad');
  check(misplaced === 0, 'each key on one partition', misplaced + ' misplaced');
  await consumer.stop();
  await consumer.disconnect();

  const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const ends = new Map(offsets.map((p) => [p.partition, p.high]));
  const atEnd = committed[0].partitions.every((p) => p.offset === ends.get(p.partition));
  check(atEnd, "the group's committed offsets are the end offsets", JSON.stringify(committed[0].partitions));
  const groups = await admin.describeGroups([group]);
  check(groups.groups[0].state === 'Empty', 'the group is Empty after its consumer left', groups.groups[0].state);

  await producer.disconnect();
  await admin.disconnect();
}

main().then(() => process.exit(failed ? 1 : 0), (e) => { fail('error: ' + (e && e.stack || e)); process.exit(1); });
