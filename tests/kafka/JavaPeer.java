// A Java KafkaConsumer group member for groupclient's tests. Reports JSON lines on stdout like
// tests/peers/*.py: ready, assigned {partitions: all it owns}, revoked, lost, records, committed,
// error, closed. SIGTERM closes it gracefully (LeaveGroup for dynamic members).
import java.time.Duration;
import java.util.*;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;

public class JavaPeer {
    // every event carries "t": CLOCK_MONOTONIC in seconds (System.nanoTime() on Linux reads the
    // clock Python's time.monotonic() reads), so events of different peers can be ordered
    static synchronized void report(String json) {
        String t = String.format(Locale.ROOT, ",\"t\":%.6f}", System.nanoTime() / 1e9);
        System.out.println(json.substring(0, json.length() - 1) + t);
        System.out.flush();
    }

    static String ints(Collection<Integer> values) {
        return values.stream().sorted().map(String::valueOf).collect(Collectors.joining(",", "[", "]"));
    }

    static Set<Integer> partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(TopicPartition::partition).collect(Collectors.toCollection(TreeSet::new));
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static final Map<String, String> ASSIGNORS = Map.of(
        "range", "org.apache.kafka.clients.consumer.RangeAssignor",
        "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
        "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
        "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        int session = Integer.parseInt(args.getOrDefault("session-ms", "6000"));
        Properties p = new Properties();
        p.put("bootstrap.servers", args.get("bootstrap"));
        p.put("group.id", args.get("group"));
        String protocol = args.getOrDefault("protocol", "classic");
        p.put("group.protocol", protocol);
        p.put("client.id", args.getOrDefault("client-id", "java-peer"));
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("metadata.max.age.ms", "2000");
        if (protocol.equals("classic")) {  // under "consumer" the broker sets these (Java refuses them)
            p.put("session.timeout.ms", String.valueOf(session));
            p.put("heartbeat.interval.ms", String.valueOf(Math.max(session / 6, 100)));
            p.put("partition.assignment.strategy", Arrays.stream(args.getOrDefault("strategy", "range").split(","))
                .map(ASSIGNORS::get).collect(Collectors.joining(",")));
        }
        if (args.containsKey("instance-id")) p.put("group.instance.id", args.get("instance-id"));

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        Set<Integer> owned = new TreeSet<>();
        consumer.subscribe(List.of(args.get("topic")), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                owned.removeAll(partitions(revoked));
                report("{\"event\":\"revoked\",\"partitions\":" + ints(partitions(revoked)) + "}");
            }

            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                owned.addAll(partitions(assigned));
                report("{\"event\":\"assigned\",\"partitions\":" + ints(owned) + "}");
            }

            public void onPartitionsLost(Collection<TopicPartition> lost) {
                owned.removeAll(partitions(lost));
                report("{\"event\":\"lost\",\"partitions\":" + ints(partitions(lost)) + "}");
            }
        });
        final Thread main = Thread.currentThread();
        final boolean[] stopping = {false};
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping[0] = true;
            consumer.wakeup();
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
                    items.append('[').append(r.partition()).append(',').append(r.offset()).append(',').append(quote(value)).append(']');
                }
                report("{\"event\":\"records\",\"items\":[" + items + "]}");
                consumer.commitSync();
                report("{\"event\":\"committed\"}");
            }
        } catch (WakeupException e) {
            // closing
        } catch (Exception e) {
            report("{\"event\":\"error\",\"type\":" + quote(e.getClass().getSimpleName()) + ",\"message\":" + quote(String.valueOf(e.getMessage())) + "}");
            exit = 2;
        } finally {
            report("{\"event\":\"closing\"}");  // it stops consuming here
            consumer.close();
            report("{\"event\":\"closed\"}");
        }
        if (exit != 0) Runtime.getRuntime().halt(exit);
    }
}
