// kafkajs through a node kill: an idempotent acks=-1 producer writes to a
// replicated topic (3 partitions, replication factor 3, min.insync.replicas
// 2) while run.sh SIGKILLs a node and starts it again; then a kafkajs
// consumer reads the topic back. Every record kafkajs acknowledged must be
// there once, at the partition and offset it was acknowledged at.
// MARKER is created once the producer is under way: the caller kills then.
// Prints "ok kafkajs-failover: …" / "FAIL kafkajs-failover: …" lines.
//
//   node test/interop/kafkajs/failover.js BOOTSTRAP MARKER
'use strict';
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, marker] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: 'strand-interop-failover', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
  retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 2000 },
});
const topic = 'interop-failover-js';
const N = 1500;
let failed = 0;
const ok = (msg) => console.log('ok kafkajs-failover: ' + msg);
const fail = (msg) => { failed++; console.log('FAIL kafkajs-failover: ' + msg); };
const check = (cond, msg, detail) => (cond ? ok(msg) : fail(msg + (detail ? ' (' + detail + ')' : '')));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: 3, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
    waitForLeaders: true,
  });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const acked = new Map(); // value -> "partition@offset"
  const errors = [];
  for (let i = 0; i < N; i++) {
    const partition = i % 3;
    try {
      const [md] = await producer.send({ topic, acks: -1, messages: [{ partition, value: 'js-' + i }] });
      acked.set('js-' + i, md.partition + '@' + md.baseOffset);
    } catch (e) {
      errors.push('js-' + i + ': ' + e.message);
    }
    if (acked.size === 200 && !fs.existsSync(marker)) fs.writeFileSync(marker, '');
    await sleep(4);
  }
  await producer.disconnect();
  check(errors.length === 0, acked.size + ' of ' + N + ' sends acknowledged with acks=-1 through the kill', errors.slice(0, 3).join('; '));

  // Read back up to the high watermarks, which replication may take a
  // moment to bring level on a restarted node.
  const offsets = await admin.fetchTopicOffsets(topic);
  const want = offsets.reduce((s, p) => s + Number(p.high), 0);
  const consumer = kafka.consumer({ groupId: 'interop-failover-js-' + Date.now() });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const at = new Map(); // "partition@offset" -> value
  const count = new Map(); // value -> times read
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('read ' + at.size + ' of ' + want + ' records in 60 s')), 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const v = message.value.toString();
        at.set(partition + '@' + message.offset, v);
        count.set(v, (count.get(v) || 0) + 1);
        if (at.size >= want) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  await admin.disconnect();
  const wrong = [...acked].filter(([v, p]) => at.get(p) !== v);
  check(wrong.length === 0, 'every acknowledged record read back at its acknowledged partition and offset (' + acked.size + ')',
    wrong.slice(0, 5).map(([v, p]) => v + ' acked at ' + p + ', found ' + at.get(p)).join('; '));
  const dups = [...count].filter(([, n]) => n > 1);
  check(dups.length === 0, 'no record twice (idempotence)', dups.slice(0, 5).map(([v, n]) => v + ' x' + n).join('; '));
}

main().then(
  () => process.exit(failed ? 1 : 0),
  (e) => { console.log('FAIL kafkajs-failover: ' + e.message); process.exit(1); },
);
