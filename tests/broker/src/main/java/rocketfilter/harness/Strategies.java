package rocketfilter.harness;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

/** The client's allocation strategies from the names and parameters rocketfilter's group files use. */
final class Strategies {
    private Strategies() {
    }

    static AllocateMessageQueueStrategy of(JsonElement spec) {
        JsonObject o;
        if (spec == null || spec.isJsonNull()) {
            o = new JsonObject();
            o.addProperty("name", "AVG");
        } else if (spec.isJsonPrimitive()) {
            o = new JsonObject();
            o.addProperty("name", spec.getAsString());
        } else {
            o = spec.getAsJsonObject();
        }
        String name = o.get("name").getAsString();
        if (name.startsWith("MACHINE_ROOM_NEARBY-")) {
            o = o.deepCopy();
            o.addProperty("inner", name.substring("MACHINE_ROOM_NEARBY-".length()));
            name = "MACHINE_ROOM_NEARBY";
        }
        switch (name) {
            case "AVG":
                return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE":
                return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH":
                return o.has("virtualNodeCnt")
                    ? new AllocateMessageQueueConsistentHash(o.get("virtualNodeCnt").getAsInt())
                    : new AllocateMessageQueueConsistentHash();
            case "CONFIG": {
                AllocateMessageQueueByConfig s = new AllocateMessageQueueByConfig();
                List<MessageQueue> mqs = new ArrayList<>();
                for (JsonElement e : o.getAsJsonArray("messageQueueList")) {
                    JsonObject q = e.getAsJsonObject();
                    mqs.add(new MessageQueue(q.get("topic").getAsString(), q.get("brokerName").getAsString(),
                        q.get("queueId").getAsInt()));
                }
                s.setMessageQueueList(mqs);
                return s;
            }
            case "MACHINE_ROOM": {
                AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
                HashSet<String> idcs = new HashSet<>();
                o.getAsJsonArray("consumerIdcs").forEach(e -> idcs.add(e.getAsString()));
                s.setConsumeridcs(idcs);
                return s;
            }
            case "MACHINE_ROOM_NEARBY": {
                Map<String, String> brokers = rooms(o.getAsJsonObject("brokerRooms"));
                Map<String, String> consumers = rooms(o.getAsJsonObject("consumerRooms"));
                AllocateMachineRoomNearby.MachineRoomResolver resolver = new AllocateMachineRoomNearby.MachineRoomResolver() {
                    @Override
                    public String brokerDeployIn(MessageQueue messageQueue) {
                        return brokers.get(messageQueue.getBrokerName());
                    }

                    @Override
                    public String consumerDeployIn(String clientID) {
                        return consumers.get(clientID);
                    }
                };
                return new AllocateMachineRoomNearby(of(o.get("inner")), resolver);
            }
            default:
                throw new IllegalArgumentException("unknown allocate strategy " + name);
        }
    }

    private static Map<String, String> rooms(JsonObject o) {
        Map<String, String> m = new HashMap<>();
        if (o != null) {
            o.entrySet().forEach(e -> m.put(e.getKey(), e.getValue().getAsString()));
        }
        return m;
    }
}
