// @kafkajs/confluent-schema-registry and kafkajs against strand serve's
// built-in schema registry: register Avro and Protobuf schemas, encode
// with the registry client, produce with kafkajs to topics with
// strand.validation=schema, read back and decode with the client, and
// check that `strand consume --decode` shows the same records. A record
// that is not in the wire format goes to the DLQ with its reason.
// Prints "ok schema: …" / "FAIL schema: …" lines, as run.sh expects.
//
//   node test/interop/kafkajs/schema.js PORT REGISTRY_URL STRAND_BIN
'use strict';
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const { execFileSync } = require('child_process');
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');

const broker = '127.0.0.1:' + process.argv[2];
const registryURL = process.argv[3];
const bin = process.argv[4];
const kafka = new Kafka({ clientId: 'strand-interop-schema', brokers: [broker], logLevel: logLevel.ERROR });
const registry = new SchemaRegistry({ host: registryURL });
let failed = 0;
const ok = (msg) => console.log('ok schema: ' + msg);
const fail = (msg) => { failed++; console.log('FAIL schema: ' + msg); };
const check = (cond, msg, detail) => (cond ? ok(msg) : fail(msg + (detail ? ' (' + detail + ')' : '')));

const avroTopic = 'interop-schema-avro';
const protoTopic = 'interop-schema-proto';
const avroSchema = {
  type: 'record', name: 'Order', namespace: 'interop',
  fields: [{ name: 'id', type: 'long' }, { name: 'item', type: 'string' }],
};
const protoSchema = 'syntax = "proto3";\npackage interop;\nmessage Reading {\n  string sensor = 1;\n  int64 value = 2;\n}\n';

async function readAll(topic, n) {
  const consumer = kafka.consumer({ groupId: topic + '-reader' });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(topic + ': read ' + out.length + ' of ' + n + ' in 30s')), 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        out.push(message);
        if (out.length === n) { clearTimeout(timer); resolve(); }
      },
    });
  });
  await consumer.disconnect();
  return out;
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [avroTopic, protoTopic].map((topic) => ({ topic, numPartitions: 1, configEntries: [{ name: 'strand.validation', value: 'schema' }] })),
  });

  const { id: avroID } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroSchema) }, { subject: avroTopic + '-value' });
  const { id: protoID } = await registry.register({ type: SchemaType.PROTOBUF, schema: protoSchema }, { subject: protoTopic + '-value' });
  check(avroID > 0 && protoID > 0 && avroID !== protoID, 'registered an Avro and a Protobuf schema', avroID + ', ' + protoID);
  const again = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroSchema) }, { subject: avroTopic + '-value' });
  check(again.id === avroID, 'registering the same schema again answers the same id', again.id);
  check((await registry.getLatestSchemaId(avroTopic + '-value')) === avroID, 'getLatestSchemaId');

  const orders = [{ id: 1, item: 'book' }, { id: 2, item: 'pen' }, { id: 3, item: 'ink' }];
  const readings = [{ sensor: 's1', value: 20 }, { sensor: 's2', value: 21 }];
  const producer = kafka.producer();
  await producer.connect();
  const avroValues = await Promise.all(orders.map((o) => registry.encode(avroID, o)));
  const res = await producer.send({
    topic: avroTopic, acks: -1,
    messages: [
      { value: avroValues[0] },
      { value: Buffer.from('{"id":4,"item":"not in the wire format"}') },
      { value: avroValues[1] },
      { value: avroValues[2] },
    ],
  });
  check(res[0].errorCode === 0 && res[0].baseOffset === '0', 'a batch with an invalid record is acknowledged from offset 0', JSON.stringify(res));
  const protoValues = await Promise.all(readings.map((r) => registry.encode(protoID, r)));
  await producer.send({ topic: protoTopic, acks: -1, messages: protoValues.map((value) => ({ value })) });
  await producer.disconnect();

  const got = await readAll(avroTopic, 3);
  check(JSON.stringify(got.map((m) => m.offset)) === '["0","2","3"]', 'the valid Avro records are at their offsets, the invalid one a gap', got.map((m) => m.offset).join(','));
  const decoded = await Promise.all(got.map((m) => registry.decode(m.value)));
  check(JSON.stringify(decoded) === JSON.stringify(orders), 'the registry client decodes what Strand stored', JSON.stringify(decoded));
  const gotProto = await readAll(protoTopic, 2);
  const decodedProto = await Promise.all(gotProto.map((m) => registry.decode(m.value)));
  check(JSON.stringify(decodedProto.map((r) => ({ sensor: r.sensor, value: Number(r.value) }))) === JSON.stringify(readings),
    'Protobuf records (framed without message indexes, as this client writes them) are accepted and decode', JSON.stringify(decodedProto));

  const dlq = await readAll(avroTopic + '.dlq', 1);
  const reason = dlq[0].headers['strand.dlq.reason'].toString();
  check(reason.startsWith('schema: no Confluent wire-format header'), 'the DLQ has the invalid record with its reason', reason);

  const cli = (topic) => execFileSync(bin, ['consume', topic, '--decode', '--brokers', broker, '--registry', registryURL, '-f', '%s\n'], { encoding: 'utf8' });
  const cliAvro = cli(avroTopic).trim().split('\n').map((l) => JSON.parse(l));
  check(JSON.stringify(cliAvro) === JSON.stringify(orders), 'strand consume --decode shows the Avro records', JSON.stringify(cliAvro));
  const cliProto = cli(protoTopic).trim().split('\n').map((l) => JSON.parse(l));
  check(JSON.stringify(cliProto) === JSON.stringify(readings.map((r) => ({ sensor: r.sensor, value: String(r.value) }))),
    'strand consume --decode shows the Protobuf records (int64 as a string, protobuf JSON)', JSON.stringify(cliProto));
  await admin.disconnect();
}

main().then(
  () => process.exit(failed > 0 ? 1 : 0),
  (err) => { fail('error: ' + (err && err.stack || err)); process.exit(1); },
);
