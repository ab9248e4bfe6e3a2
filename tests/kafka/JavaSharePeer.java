// A Java KafkaShareConsumer share-group member for groupclient's tests. Reports JSON lines on
// stdout as tests/peers/share_common.py describes: ready, delivered, accepted, refused, error,
// closing, closed. Explicit acknowledgement: each record accepted, then commitSync. SIGTERM
// closes it gracefully after the poll under way (its share sessions closed, then it leaves the group).
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;

public class JavaSharePeer {
    static synchronized void report(String json) {
        String t = String.format(Locale.ROOT, ",\"t\":%.6f}", System.nanoTime() / 1e9);
        System.out.println(json.substring(0, json.length() - 1) + t);
        System.out.flush();
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        Properties p = new Properties();
        p.put("bootstrap.servers", args.get("bootstrap"));
        p.put("group.id", args.get("group"));
        p.put("client.id", args.getOrDefault("client-id", "java-share-peer"));
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", args.getOrDefault("max-records", "10"));
        p.put("metadata.max.age.ms", "2000");
        double workMs = Double.parseDouble(args.getOrDefault("work-ms", "0"));

        KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p);
        consumer.subscribe(List.of(args.get("topic")));
        final Thread main = Thread.currentThread();
        final boolean[] stopping = {false};
        // no wakeup(): one that lands in commitSync() leaves its acknowledgements to close(), which
        // sends them with nothing to report what the broker said; the loop ends at its next turn
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping[0] = true;
            try { main.join(20000); } catch (InterruptedException ignored) { }
        }));
        report("{\"event\":\"ready\"}");
        int exit = 0;
        try {
            while (!stopping[0]) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                StringBuilder items = new StringBuilder();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (items.length() > 0) items.append(',');
                    String value = r.value() == null ? "" : new String(r.value());
                    items.append('[').append(r.partition()).append(',').append(r.offset()).append(',')
                        .append(quote(value)).append(',').append(r.deliveryCount().orElse((short) -1)).append(']');
                }
                report("{\"event\":\"delivered\",\"items\":[" + items + "]}");
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (workMs > 0) Thread.sleep((long) workMs, (int) ((workMs % 1) * 1e6));
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync(Duration.ofSeconds(10));
                Map<Integer, Optional<KafkaException>> byPartition = new HashMap<>();
                results.forEach((tip, error) -> byPartition.put(tip.partition(), error));
                StringBuilder accepted = new StringBuilder();
                StringBuilder refused = new StringBuilder();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    Optional<KafkaException> error = byPartition.get(r.partition());
                    if (error == null) continue;
                    StringBuilder into = error.isPresent() ? refused : accepted;
                    if (into.length() > 0) into.append(',');
                    into.append('[').append(r.partition()).append(',').append(r.offset());
                    if (error.isPresent()) into.append(',').append(quote(error.get().getClass().getSimpleName()));
                    into.append(']');
                }
                report("{\"event\":\"accepted\",\"items\":[" + accepted + "]}");
                if (refused.length() > 0) report("{\"event\":\"refused\",\"items\":[" + refused + "]}");
            }
        } catch (WakeupException e) {
            // closing
        } catch (Exception e) {
            report("{\"event\":\"error\",\"type\":" + quote(e.getClass().getSimpleName()) + ",\"message\":"
                   + quote(String.valueOf(e.getMessage())) + "}");
            exit = 2;
        } finally {
            report("{\"event\":\"closing\"}");
            consumer.close();
            report("{\"event\":\"closed\"}");
        }
        if (exit != 0) Runtime.getRuntime().halt(exit);
    }
}
