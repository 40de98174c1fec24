// kafkajs transactions against strand serve (A-T8): a transactional
// producer runs 100 transactions of 10 records, aborting every third; a
// read_committed kafkajs consumer and kcat with isolation.level=
// read_committed must each see exactly the committed records, and a
// read_uncommitted kcat all of them.
//
//   node test/interop/kafkajs/txn.js PORT
'use strict';
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const { Kafka, logLevel } = require('kafkajs');
const { execFileSync } = require('child_process');

const port = process.argv[2];
const broker = '127.0.0.1:' + port;
const kafka = new Kafka({ clientId: 'strand-interop-txn', brokers: [broker], logLevel: logLevel.ERROR });
const topic = 'interop-kafkajs-txn';
const TXNS = 100, PER = 10;
let failed = 0;
const ok = (msg) => console.log('ok kafkajs-txn: ' + msg);
const fail = (msg) => { failed++; console.log('FAIL kafkajs-txn: ' + msg); };
const check = (cond, msg, detail) => (cond ? ok(msg) : fail(msg + (detail ? ' (' + detail + ')' : '')));

// kcatValues reads the whole topic with kcat at an isolation level.
function kcatValues(isolation) {
  const out = execFileSync(process.env.KCAT || 'kcat', ['-C', '-b', broker, '-t', topic, '-o', 'beginning', '-e', '-q',
    '-X', 'isolation.level=' + isolation, '-f', '%s\\n'], { encoding: 'utf8', timeout: 60000 });
  return out.split('\n').filter((l) => l !== '');
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  await admin.disconnect();

  const producer = kafka.producer({ transactionalId: 'interop-kafkajs-txn', idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const committed = new Set();
  let aborted = 0;
  for (let t = 0; t < TXNS; t++) {
    const txn = await producer.transaction();
    const messages = [];
    for (let i = 0; i < PER; i++) messages.push({ key: 'k' + i, value: 't' + t + '-r' + i });
    await txn.send({ topic, messages });
    if (t % 3 === 1) {
      await txn.abort();
      aborted++;
    } else {
      await txn.commit();
      messages.forEach((m) => committed.add(m.value));
    }
  }
  await producer.disconnect();
  ok(TXNS + ' transactions (' + aborted + ' aborted) through kafkajs');

  const consumer = kafka.consumer({ groupId: 'interop-kafkajs-txn', readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('read ' + seen.length + ' of ' + committed.size + ' in 60s')), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value.toString());
        if (seen.length >= committed.size) {
          // Give an aborted record the chance to show up too.
          setTimeout(() => { clearTimeout(timer); resolve(); }, 1000);
        }
      },
    });
  });
  await consumer.disconnect();
  check(seen.length === committed.size && seen.every((v) => committed.has(v)) && new Set(seen).size === seen.length,
    'a read_committed kafkajs consumer sees exactly the ' + committed.size + ' committed records',
    'saw ' + seen.length + ', ' + seen.filter((v) => !committed.has(v)).length + ' not committed');

  const rc = kcatValues('read_committed');
  check(rc.length === committed.size && rc.every((v) => committed.has(v)),
    'kcat -X isolation.level=read_committed sees exactly the committed records', 'saw ' + rc.length);
  const ru = kcatValues('read_uncommitted');
  check(ru.length === TXNS * PER, 'kcat read_uncommitted sees every record, aborted ones too', 'saw ' + ru.length);
}

main().then(() => process.exit(failed ? 1 : 0), (err) => { fail('error: ' + (err && err.stack || err)); process.exit(1); });
