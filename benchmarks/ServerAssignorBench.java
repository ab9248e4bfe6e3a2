// Times Apache Kafka's own server-side assignors (UniformAssignor, RangeAssignor from
// kafka-group-coordinator) on the group shapes benchmarks/server_assignors.py gives our Python
// ports, so the two can be compared in one run on one machine.  Compiled and started by
// `python benchmarks/server_assignors.py --java`; not meant to be run by hand (but can be):
//
//   javac -cp "<kafka libs>/*" -d /tmp/sab benchmarks/ServerAssignorBench.java
//   java -cp "<kafka libs>/*:/tmp/sab" ServerAssignorBench MEMBERS PARTITIONS TOPICS WARMUP WARMUP_S REPEATS
//
// The shapes, as on the Python side: MEMBERS members "member-%07d", all subscribed to TOPICS topics
// (ids Uuid(0, 1) .. Uuid(0, TOPICS)) of PARTITIONS / TOPICS partitions each (homogeneous
// subscriptions, no racks, no instance ids).  "full": every member without a target assignment.
// "incremental": one member ("member-new") joined, every other member holding the target the full
// assignment gave it; the group spec carries the inverted target assignment (partition -> member)
// as Kafka's coordinator keeps it between rebalances, so, like Kafka's JMH ServerSideAssignorBenchmark,
// building it is not timed (its cost is reported on the "inverted" line).
// The topic metadata is a MetadataImage built from TopicRecord/PartitionRecord replays, read through
// SubscribedTopicDescriberImpl, as the 4.1 coordinator does.
//
// Each case: untimed runs (JIT) until there have been at least WARMUP of them and WARMUP_S seconds
// have passed (Kafka's JMH benchmark warms up for 5 x 10 s; C2 needs more than a handful of runs),
// then REPEATS timed runs, a System.gc() before each (outside the timing); the best and the median
// are printed, and how many warm-up runs there were.  Output, one line per case:
//   case <assignor> <full|incremental> best_ms=<b> median_ms=<m> warmup_runs=<w> digest=<d>
// where digest is the first 16 hex digits of the SHA-256 of the assignment's canonical text (see
// digest()), the same text server_assignors.py hashes, so equal digests mean equal assignments.

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.SubscribedTopicDescriberImpl;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

public final class ServerAssignorBench {

    public static void main(String[] args) throws Exception {
        int memberCount = Integer.parseInt(args[0]);
        int totalPartitions = Integer.parseInt(args[1]);
        int topicCount = Integer.parseInt(args[2]);
        int warmup = Integer.parseInt(args[3]);
        double warmupSeconds = Double.parseDouble(args[4]);
        int repeats = Integer.parseInt(args[5]);

        long started = System.nanoTime();
        List<Uuid> topics = new ArrayList<>();
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        int perTopic = totalPartitions / topicCount;
        for (int t = 0; t < topicCount; t++) {
            Uuid id = new Uuid(0L, t + 1);
            topics.add(id);
            delta.replay(new TopicRecord().setTopicId(id).setName("topic-" + t));
            for (int p = 0; p < perTopic; p++) {
                delta.replay(new PartitionRecord().setTopicId(id).setPartitionId(p)
                    .setReplicas(List.of(p % 4, (p + 1) % 4)).setIsr(List.of(p % 4, (p + 1) % 4))
                    .setLeader(p % 4));
            }
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriberImpl(delta.apply(MetadataProvenance.EMPTY));
        Set<Uuid> subscribed = Collections.unmodifiableSet(new HashSet<>(topics));

        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        for (int i = 0; i < memberCount; i++) {
            members.put(String.format("member-%07d", i), new MemberSubscriptionAndAssignmentImpl(
                Optional.empty(), Optional.empty(), subscribed, Assignment.EMPTY));
        }
        GroupSpec fullSpec = new GroupSpecImpl(members, SubscriptionType.HOMOGENEOUS, Map.of());
        System.out.printf("setup members=%d partitions=%d topics=%d seconds=%.1f%n",
            memberCount, perTopic * topicCount, topicCount, (System.nanoTime() - started) / 1e9);

        Map<String, ConsumerGroupPartitionAssignor> assignors = new java.util.LinkedHashMap<>();
        assignors.put("uniform", new UniformAssignor());
        assignors.put("range", new RangeAssignor());
        for (Map.Entry<String, ConsumerGroupPartitionAssignor> entry : assignors.entrySet()) {
            String name = entry.getKey();
            ConsumerGroupPartitionAssignor assignor = entry.getValue();
            GroupAssignment previous = time(name, "full", assignor, fullSpec, describer,
                warmup, warmupSeconds, repeats);

            long invertStarted = System.nanoTime();
            Map<String, MemberSubscriptionAndAssignmentImpl> grown = new HashMap<>();
            Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
            for (Map.Entry<String, MemberAssignment> member : previous.members().entrySet()) {
                Map<Uuid, Set<Integer>> target = member.getValue().partitions();
                grown.put(member.getKey(), new MemberSubscriptionAndAssignmentImpl(
                    Optional.empty(), Optional.empty(), subscribed, new Assignment(target)));
                for (Map.Entry<Uuid, Set<Integer>> topic : target.entrySet()) {
                    Map<Integer, String> owners = inverted.computeIfAbsent(topic.getKey(), k -> new HashMap<>());
                    for (Integer partition : topic.getValue()) {
                        owners.put(partition, member.getKey());
                    }
                }
            }
            grown.put("member-new", new MemberSubscriptionAndAssignmentImpl(
                Optional.empty(), Optional.empty(), subscribed, Assignment.EMPTY));
            GroupSpec incrementalSpec = new GroupSpecImpl(grown, SubscriptionType.HOMOGENEOUS, inverted);
            System.out.printf("inverted %s ms=%.1f%n", name, (System.nanoTime() - invertStarted) / 1e6);
            previous = null;
            time(name, "incremental", assignor, incrementalSpec, describer, warmup, warmupSeconds, repeats);
        }
    }

    private static GroupAssignment time(String name, String kind, ConsumerGroupPartitionAssignor assignor,
                                        GroupSpec spec, SubscribedTopicDescriber describer,
                                        int warmup, double warmupSeconds, int repeats) throws Exception {
        GroupAssignment result = null;
        int warmupRuns = 0;
        long warmupEnds = System.nanoTime() + (long) (warmupSeconds * 1e9);
        while (warmupRuns < warmup || System.nanoTime() < warmupEnds) {
            result = null;
            result = assignor.assign(spec, describer);
            warmupRuns++;
        }
        double[] millis = new double[repeats];
        for (int i = 0; i < repeats; i++) {
            result = null;
            System.gc();
            long started = System.nanoTime();
            result = assignor.assign(spec, describer);
            millis[i] = (System.nanoTime() - started) / 1e6;
        }
        Arrays.sort(millis);
        double median = repeats % 2 == 1 ? millis[repeats / 2] : (millis[repeats / 2 - 1] + millis[repeats / 2]) / 2;
        System.out.printf("case %s %s best_ms=%.3f median_ms=%.3f warmup_runs=%d digest=%s%n",
            name, kind, millis[0], median, warmupRuns, digest(result));
        System.out.flush();
        return result;
    }

    /** SHA-256 (first 16 hex digits) of lines "member\tmsb:lsb\tp,p,p\n": members by id, topics by
     *  Uuid order, partitions ascending; topics with no partitions left out. */
    static String digest(GroupAssignment assignment) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        StringBuilder line = new StringBuilder();
        for (Map.Entry<String, MemberAssignment> member : new TreeMap<>(assignment.members()).entrySet()) {
            for (Map.Entry<Uuid, Set<Integer>> topic : new TreeMap<>(member.getValue().partitions()).entrySet()) {
                if (topic.getValue().isEmpty()) {
                    continue;
                }
                int[] parts = topic.getValue().stream().mapToInt(Integer::intValue).sorted().toArray();
                line.setLength(0);
                line.append(member.getKey()).append('\t').append(topic.getKey().getMostSignificantBits())
                    .append(':').append(topic.getKey().getLeastSignificantBits()).append('\t');
                for (int i = 0; i < parts.length; i++) {
                    if (i > 0) {
                        line.append(',');
                    }
                    line.append(parts[i]);
                }
                line.append('\n');
                sha.update(line.toString().getBytes(StandardCharsets.UTF_8));
            }
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : sha.digest()) {
            hex.append(String.format("%02x", b));
        }
        return hex.substring(0, 16);
    }
}
