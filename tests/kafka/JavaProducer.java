// A Java KafkaProducer for groupclient's record-path corpus: writes the records of
// tests/integration/test_record_paths_kafka.py's record(i) (the same keys, values and headers,
// computed the same way) to partition 0 of a topic, in one of three modes:
//   plain        records 0..count-1, no transaction
//   transactions records 0..count-1 in transactions of 50, every third transaction aborted, so the
//                log holds commit and abort markers (control batches) and aborted records
//   idempotent   records 0..count-1 with enable.idempotence (producer id and sequence numbers)
// Prints one JSON line: {"sent": n, "aborted": [first offsets of aborted ranges...]}.
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.header.internals.RecordHeaders;

public class JavaProducer {
    static byte[] bytes(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static ProducerRecord<byte[], byte[]> record(String topic, int i) {
        byte[] key = i % 7 == 0 ? null : bytes("key-" + i);
        byte[] value = (i % 11 == 0 && key != null) ? null
            : bytes("{\"n\":" + i + ",\"text\":\"" + "abc".repeat(i % 50) + "\"}");
        RecordHeaders headers = new RecordHeaders();
        if (i % 3 == 0) {
            headers.add("trace", bytes("t" + i));
            headers.add("empty", new byte[0]);
        }
        if (i % 5 == 0) headers.add("nil", null);  // a header without a value
        if (i % 13 == 0) headers.add("h\u00e9", bytes("\u00fcnicode \u2603"));
        return new ProducerRecord<>(topic, 0, 1_700_000_000_000L + i, key, value, headers);
    }

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0], topic = argv[1], codec = argv[2], mode = argv[4];
        int count = Integer.parseInt(argv[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("compression.type", codec);
        p.put("linger.ms", "20");
        p.put("batch.size", "16384");
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("enable.idempotence", mode.equals("plain") ? "false" : "true");
        if (mode.equals("plain")) p.put("acks", "1");
        if (mode.equals("transactions")) p.put("transactional.id", "corpus-" + topic);
        List<Integer> aborted = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            if (mode.equals("transactions")) {
                producer.initTransactions();
                for (int start = 0, n = 0; start < count; start += 50, n++) {
                    producer.beginTransaction();
                    for (int i = start; i < Math.min(start + 50, count); i++) producer.send(record(topic, i));
                    if (n % 3 == 2) {
                        producer.flush();
                        producer.abortTransaction();
                        aborted.add(start);
                    } else {
                        producer.commitTransaction();
                    }
                }
            } else {
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < count; i++) sent.add(producer.send(record(topic, i)));
                producer.flush();
                for (java.util.concurrent.Future<RecordMetadata> f : sent) f.get();
            }
        }
        StringBuilder out = new StringBuilder();
        for (int a : aborted) out.append(out.length() == 0 ? "" : ",").append(a);
        System.out.println("{\"sent\":" + count + ",\"aborted\":[" + out + "]}");
    }
}
