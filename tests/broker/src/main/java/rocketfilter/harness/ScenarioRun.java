package rocketfilter.harness;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.client.ConsumerGroupInfo;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.remoting.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/** One scenario: a fresh name server and broker on loopback, its producer, consumers, pulls and time queries. */
final class ScenarioRun {
    private static final long RPC_TIMEOUT_MS = 60_000;
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();

    private final Path scenarioFile;
    private final Path outdir;
    private final JsonObject scenario;
    private NamesrvController namesrv;
    private BrokerController broker;
    private String nsAddr;
    private String brokerName;
    private Path work;
    private final List<DefaultMQPushConsumer> pushConsumers = new ArrayList<>();
    private final Map<String, DefaultMQPullConsumer> pullConsumers = new LinkedHashMap<>();
    private DefaultMQProducer producer;
    private volatile String lagging = "";
    private final ConcurrentLinkedQueue<JsonObject> deliveries = new ConcurrentLinkedQueue<>();
    private final List<JsonObject> sent = new ArrayList<>();

    ScenarioRun(Path scenarioFile, Path outdir) throws IOException {
        this.scenarioFile = scenarioFile;
        this.outdir = outdir;
        this.scenario = JsonParser.parseString(Files.readString(scenarioFile, StandardCharsets.UTF_8)).getAsJsonObject();
    }

    void run() throws Exception {
        Path store = outdir.resolve("store");
        if (Files.exists(store)) {
            UtilAll.deleteFile(store.toFile());
        }
        Files.createDirectories(outdir);
        work = Files.createTempDirectory("rf-harness-");
        try {
            startNamesrv(work);
            startBroker(store);
            phase("servers");
            createTopics();
            startProducer();
            phase("topics and producer");
            startGroups();
            String settledTables = GSON.toJson(brokerTables());
            phase("consumers settled");
            sendMessages();
            phase("sent");
            consumeToEnd();
            await("the group tables hold every consumer's last subVersion", this::tablesCaughtUp);
            // The deliveries are compared with one table per group: a table that moved while the
            // messages were consumed (a re-stamp the settle check could not see) voids the run.
            String endTables = GSON.toJson(brokerTables());
            if (!endTables.equals(settledTables)) {
                throw new TableMovedException(scenarioFile + ": a group's subscription table changed while consuming: "
                    + settledTables + " -> " + endTables);
            }
            writeLines("groups.jsonl", groupTables());
            phase("consumed");
            List<JsonObject> pulls = pulls();
            List<JsonObject> times = timeQueries();
            writeLines("wants.jsonl", wants());
            phase("pulls");
            writeLines("deliveries.jsonl", sortedDeliveries());
            writeLines("pulls.jsonl", pulls);
            writeLines("time_queries.jsonl", times);
            writeLines("sent.jsonl", sent);
        } finally {
            shutdownClients();
            phase("clients shut down");
            File local = new File(System.getProperty("rocketmq.client.localOffsetStoreDir",
                System.getProperty("user.home") + File.separator + ".rocketmq_offsets"));
            UtilAll.deleteFile(local);   // BROADCASTING offsets of this scenario's clients must not leak into the next
        }
    }

    /**
     * Shuts the broker (which persists config/*.json and flushes the store) and the name server
     * down, then deletes the scratch directory. Mostly waiting (the store alone sleeps 3 s), so
     * the batch runs it while the next scenario starts: the scenario is complete when it returns.
     */
    void shutdownServers() {
        if (broker != null) {
            quietly(broker::shutdown);
        }
        if (namesrv != null) {
            quietly(namesrv::shutdown);
        }
        UtilAll.deleteFile(work.toFile());
    }

    // ---- servers ----

    private void startNamesrv(Path work) throws Exception {
        NamesrvConfig config = new NamesrvConfig();
        config.setKvConfigPath(work.resolve("namesrv/kvConfig.json").toString());
        config.setConfigStorePath(work.resolve("namesrv/namesrv.properties").toString());
        NettyServerConfig server = new NettyServerConfig();
        server.setListenPort(0);
        namesrv = new NamesrvController(config, server);
        check(namesrv.initialize(), "name server initialize");
        namesrv.start();
        nsAddr = "127.0.0.1:" + namesrv.getNettyServerConfig().getListenPort();
    }

    private void startBroker(Path store) throws Exception {
        BrokerConfig brokerConfig = new BrokerConfig();
        MessageStoreConfig storeConfig = new MessageStoreConfig();
        brokerConfig.setBrokerIP1("127.0.0.1");
        brokerConfig.setNamesrvAddr(nsAddr);
        brokerConfig.setEnablePropertyFilter(true);
        brokerConfig.setBrokerConfigPath(store.resolve("config/broker.properties").toString());
        storeConfig.setStorePathRootDir(store.toString());
        storeConfig.setStorePathCommitLog(store.resolve("commitlog").toString());
        storeConfig.setMaxIndexNum(1000);
        storeConfig.setMaxHashSlotNum(4000);
        storeConfig.setTimerWheelEnable(false);
        storeConfig.setDeleteWhen("04");
        storeConfig.setHaListenPort(0);
        // A pull at the end of a queue is held for shortPollingTimeMills, not 15 s of long polling:
        // the run waits for every queue's end. What a pull returns does not depend on it.
        brokerConfig.setLongPollingEnable(false);
        brokerConfig.setShortPollingTimeMills(50);
        // TransactionMetricsFlushService busy-waits until its first flush (RocketMQ 5.3.3): with the
        // default 3 s a core spins for each scenario's first 3 s. Transactions play no part here.
        brokerConfig.setTransactionMetricFlushInterval(200);
        // The scenario's "broker" keys are BrokerConfig / MessageStoreConfig fields by name.
        Properties p = new Properties();
        JsonObject b = scenario.has("broker") ? scenario.getAsJsonObject("broker") : new JsonObject();
        for (Map.Entry<String, JsonElement> e : b.entrySet()) {
            p.setProperty(e.getKey(), e.getValue().getAsString());
        }
        MixAll.properties2Object(p, brokerConfig);
        MixAll.properties2Object(p, storeConfig);
        brokerName = brokerConfig.getBrokerName();
        NettyServerConfig server = new NettyServerConfig();
        server.setListenPort(0);
        broker = new BrokerController(brokerConfig, server, new NettyClientConfig(), storeConfig);
        check(broker.initialize(), "broker initialize");
        broker.start();
    }

    private void createTopics() throws Exception {
        List<TopicConfig> configs = new ArrayList<>();
        for (JsonElement e : scenario.getAsJsonArray("topics")) {
            JsonObject t = e.getAsJsonObject();
            int queues = t.get("queues").getAsInt();
            TopicConfig tc = new TopicConfig(t.get("name").getAsString(), queues, queues,
                PermName.PERM_READ | PermName.PERM_WRITE);
            broker.getTopicConfigManager().updateTopicConfig(tc);
            configs.add(tc);
        }
        // Registered in-process: on this machine the broker's own registration reached the name
        // server without its topic table (the topics never appeared there).
        namesrv.getRouteInfoManager().registerBroker(broker.getBrokerConfig().getBrokerClusterName(),
            broker.getBrokerAddr(), brokerName, MixAll.MASTER_ID, broker.getHAServerAddr(), null, 60_000L, false,
            broker.getTopicConfigManager().buildTopicConfigSerializeWrapper(), new ArrayList<>(), null);
        for (TopicConfig tc : configs) {
            await("route of topic " + tc.getTopicName() + " at the name server", () -> {
                try {
                    return namesrv.getRouteInfoManager().pickupTopicRouteData(tc.getTopicName()) != null;
                } catch (Exception ex) {
                    return false;
                }
            });
        }
    }

    private void startProducer() throws Exception {
        producer = new DefaultMQProducer("PID_rocketfilter_harness");
        producer.setNamesrvAddr(nsAddr);
        producer.setClientIP("127.0.0.1");
        producer.setInstanceName("harness-producer-" + System.nanoTime());
        producer.setSendMsgTimeout((int) RPC_TIMEOUT_MS);
        producer.setVipChannelEnabled(false);
        producer.start();
        for (JsonElement e : scenario.getAsJsonArray("topics")) {
            JsonObject t = e.getAsJsonObject();
            String topic = t.get("name").getAsString();
            int queues = t.get("queues").getAsInt();
            await("producer route of " + topic, () -> {
                try {
                    return producer.fetchPublishMessageQueues(topic).size() == queues;
                } catch (Exception ex) {
                    return false;
                }
            });
        }
    }

    // ---- consumers ----

    private static String[] splitClientId(String clientId) {
        int at = clientId.indexOf('@');
        if (at <= 0 || at == clientId.length() - 1) {
            throw new IllegalArgumentException("client_id must be clientIP@instanceName: " + clientId);
        }
        String ip = clientId.substring(0, at);
        String rest = clientId.substring(at + 1);
        int unit = rest.indexOf('@');
        return unit < 0 ? new String[] {ip, rest, null} : new String[] {ip, rest.substring(0, unit), rest.substring(unit + 1)};
    }

    private JsonArray groups() {
        return scenario.has("groups") ? scenario.getAsJsonArray("groups") : new JsonArray();
    }

    private void startGroups() throws Exception {
        long lastSubVersion = 0;
        for (JsonElement ge : groups()) {
            JsonObject g = ge.getAsJsonObject();
            String group = g.get("name").getAsString();
            for (JsonElement ce : g.getAsJsonArray("consumers")) {
                JsonObject c = ce.getAsJsonObject();
                String clientId = c.get("client_id").getAsString();
                String[] id = splitClientId(clientId);
                DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
                consumer.setNamesrvAddr(nsAddr);
                consumer.setClientIP(id[0]);
                consumer.setInstanceName(id[1]);
                if (id[2] != null) {
                    consumer.setUnitName(id[2]);
                }
                consumer.setVipChannelEnabled(false);
                // The broker's table follows a re-stamped subVersion at the next heartbeat: every
                // second, not every 30, so that settling waits for rebalance, not for the clock.
                consumer.setHeartbeatBrokerInterval(1000);
                consumer.setConsumeThreadMin(1);
                consumer.setConsumeThreadMax(1);
                consumer.setMessageModel(MessageModel.valueOf(str(g, "message_model", "CLUSTERING")));
                consumer.setConsumeFromWhere(ConsumeFromWhere.valueOf(str(g, "consume_from_where", "CONSUME_FROM_LAST_OFFSET")));
                if (g.has("consume_timestamp")) {
                    consumer.setConsumeTimestamp(g.get("consume_timestamp").getAsString());
                }
                consumer.setAllocateMessageQueueStrategy(Strategies.of(g.get("allocate_strategy")));
                if (c.has("post_subscription_when_pull")) {
                    consumer.setPostSubscriptionWhenPull(c.get("post_subscription_when_pull").getAsBoolean());
                }
                // Distinct milliseconds: the later consumer's subVersion must be strictly higher.
                final long previous = lastSubVersion;
                await("a new millisecond", () -> System.currentTimeMillis() > previous);
                for (Map.Entry<String, JsonElement> s : c.getAsJsonObject("subscriptions").entrySet()) {
                    JsonObject sub = s.getValue().getAsJsonObject();
                    String type = str(sub, "type", "TAG");
                    String expr = sub.get("expression").getAsString();
                    if (type.equals("TAG")) {
                        consumer.subscribe(s.getKey(), expr);
                    } else {
                        consumer.subscribe(s.getKey(), MessageSelector.bySql(expr));
                    }
                }
                for (SubscriptionData sd : consumer.getDefaultMQPushConsumerImpl().getSubscriptionInner().values()) {
                    lastSubVersion = Math.max(lastSubVersion, sd.getSubVersion());
                }
                consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                    for (MessageExt m : msgs) {
                        deliveries.add(delivery(group, clientId, m));
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                pushConsumers.add(consumer);
                await("broker registers " + clientId + " in " + group, () -> {
                    ConsumerGroupInfo info = broker.getConsumerManager().getConsumerGroupInfo(group);
                    return info != null && info.getAllClientId().contains(clientId);
                });
            }
        }
        await("rebalance settles", this::settled);
    }

    /**
     * Each group's subscription table as the broker holds it once rebalance settled, and each
     * consumer's subVersions. The push client re-stamps a topic's subVersion with the current time
     * whenever its queues of that topic change (RebalancePushImpl.messageQueueChanged) and sends a
     * heartbeat, so the table belongs to whoever rebalanced last, not to whoever subscribed last.
     */
    private List<JsonObject> groupTables() {
        List<JsonObject> out = new ArrayList<>();
        for (JsonElement ge : groups()) {
            String group = ge.getAsJsonObject().get("name").getAsString();
            JsonObject row = new JsonObject();
            row.addProperty("group", group);
            JsonObject table = new JsonObject();
            broker.getConsumerManager().getConsumerGroupInfo(group).getSubscriptionTable().forEach((topic, sd) -> {
                if (!topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
                    table.add(topic, subscriptionJson(sd));
                }
            });
            row.add("table", table);
            JsonObject consumers = new JsonObject();
            for (DefaultMQPushConsumer c : pushConsumers) {
                if (c.getConsumerGroup().equals(group)) {
                    JsonObject subs = new JsonObject();
                    c.getDefaultMQPushConsumerImpl().getSubscriptionInner().forEach((topic, sd) -> {
                        if (!topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
                            subs.add(topic, subscriptionJson(sd));
                        }
                    });
                    consumers.add(c.buildMQClientId(), subs);
                }
            }
            row.add("consumers", consumers);
            out.add(row);
        }
        return out;
    }

    /** What the broker's group tables hold now: group -> topic -> expression, type, subVersion. */
    private JsonObject brokerTables() {
        JsonObject out = new JsonObject();
        for (JsonObject row : groupTables()) {
            out.add(row.get("group").getAsString(), row.get("table"));
        }
        return out;
    }

    /** The run's premise failed (the group table moved mid-run); the same scenario may run again. */
    static final class TableMovedException extends IllegalStateException {
        TableMovedException(String message) {
            super(message);
        }
    }

    private static JsonObject subscriptionJson(SubscriptionData sd) {
        JsonObject o = new JsonObject();
        o.addProperty("expression", sd.getSubString());
        o.addProperty("type", sd.getExpressionType());
        o.addProperty("sub_version", sd.getSubVersion());
        return o;
    }

    /** The broker's table holds, per topic, the highest subVersion any consumer of the group has now. */
    private boolean tablesCaughtUp() {
        for (DefaultMQPushConsumer c : pushConsumers) {
            ConsumerGroupInfo info = broker.getConsumerManager().getConsumerGroupInfo(c.getConsumerGroup());
            for (Map.Entry<String, SubscriptionData> e : c.getDefaultMQPushConsumerImpl().getSubscriptionInner().entrySet()) {
                SubscriptionData held = info == null ? null : info.findSubscriptionData(e.getKey());
                if (held == null || held.getSubVersion() < e.getValue().getSubVersion()) {
                    return false;
                }
            }
        }
        return true;
    }

    private JsonObject delivery(String group, String clientId, MessageExt m) {
        JsonObject d = new JsonObject();
        d.addProperty("group", group);
        d.addProperty("client_id", clientId);
        d.addProperty("topic", m.getTopic());
        d.addProperty("queue_id", m.getQueueId());
        d.addProperty("queue_offset", m.getQueueOffset());
        d.addProperty("msg_id", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId());
        d.addProperty("tags", m.getTags());
        d.addProperty("keys", m.getKeys());
        return d;
    }

    private List<MessageQueue> queuesOf(String topic) {
        TopicConfig tc = broker.getTopicConfigManager().selectTopicConfig(topic);
        List<MessageQueue> mqs = new ArrayList<>();
        for (int q = 0; q < tc.getReadQueueNums(); q++) {
            mqs.add(new MessageQueue(topic, brokerName, q));
        }
        return mqs;
    }

    /** Each consumer holds exactly the queues its strategy gives it over the whole group. */
    private boolean settled() {
        if (!tablesCaughtUp()) {
            return false;
        }
        for (DefaultMQPushConsumer consumer : pushConsumers) {
            String group = consumer.getConsumerGroup();
            List<String> cids = groupClientIds(group);
            ConsumerGroupInfo info = broker.getConsumerManager().getConsumerGroupInfo(group);
            if (info == null || !new HashSet<>(info.getAllClientId()).equals(new HashSet<>(cids))) {
                return false;
            }
            String me = consumer.buildMQClientId();
            AllocateMessageQueueStrategy strategy = consumer.getAllocateMessageQueueStrategy();
            Map<MessageQueue, ProcessQueue> pqs = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
            Set<MessageQueue> held = pqs.keySet();
            for (String topic : consumer.getDefaultMQPushConsumerImpl().getSubscriptionInner().keySet()) {
                if (topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
                    continue;
                }
                List<MessageQueue> mqAll = queuesOf(topic);
                Set<MessageQueue> want;
                if (consumer.getMessageModel() == MessageModel.BROADCASTING) {
                    want = new HashSet<>(mqAll);
                } else {
                    want = new HashSet<>(strategy.allocate(group, me, mqAll, cids));
                }
                // CONFIG hands out its fixed list whatever the topic: only this topic's part counts here.
                want.removeIf(q -> !q.getTopic().equals(topic));
                Set<MessageQueue> have = held.stream().filter(q -> q.getTopic().equals(topic)).collect(Collectors.toSet());
                if (!have.equals(want)) {
                    return false;
                }
                // A queue is added before its topic's subVersion is re-stamped (messageQueueChanged):
                // until the re-stamp, the table may still change. A new ProcessQueue's lastLockTimestamp
                // is its creation time, and a concurrent consumer never locks it.
                long subVersion = consumer.getDefaultMQPushConsumerImpl().getSubscriptionInner().get(topic).getSubVersion();
                for (MessageQueue q : have) {
                    if (pqs.get(q).getLastLockTimestamp() > subVersion) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    private List<String> groupClientIds(String group) {
        TreeSet<String> ids = new TreeSet<>();
        for (JsonElement ge : groups()) {
            JsonObject g = ge.getAsJsonObject();
            if (g.get("name").getAsString().equals(group)) {
                g.getAsJsonArray("consumers").forEach(c -> ids.add(c.getAsJsonObject().get("client_id").getAsString()));
            }
        }
        return new ArrayList<>(ids);
    }

    // ---- producer ----

    private void sendMessages() throws Exception {
        int index = 0;
        for (JsonElement e : scenario.getAsJsonArray("messages")) {
            JsonObject m = e.getAsJsonObject();
            String topic = m.get("topic").getAsString();
            int queueId = m.get("queue_id").getAsInt();
            Message msg = new Message(topic, str(m, "body", "").getBytes(StandardCharsets.UTF_8));
            if (m.has("tags") && !m.get("tags").isJsonNull()) {
                msg.setTags(m.get("tags").getAsString());
            }
            if (m.has("keys") && !m.get("keys").isJsonNull()) {
                msg.setKeys(m.get("keys").getAsString());
            }
            if (m.has("properties")) {
                // MessageAccessor, not putUserProperty: a scenario may set an empty value on purpose.
                for (Map.Entry<String, JsonElement> p : m.getAsJsonObject("properties").entrySet()) {
                    MessageAccessor.putProperty(msg, p.getKey(), p.getValue().getAsString());
                }
            }
            SendResult r = producer.send(msg, (mqs, message, arg) -> {
                for (MessageQueue q : mqs) {
                    if (q.getQueueId() == (Integer) arg) {
                        return q;
                    }
                }
                throw new IllegalArgumentException("no queue " + arg + " in " + mqs);
            }, queueId, RPC_TIMEOUT_MS);
            check(r.getSendStatus() == SendStatus.SEND_OK, "send of message " + index + ": " + r);
            check(r.getMessageQueue().getQueueId() == queueId, "message " + index + " went to " + r.getMessageQueue());
            JsonObject s = new JsonObject();
            s.addProperty("index", index);
            s.addProperty("topic", topic);
            s.addProperty("queue_id", queueId);
            s.addProperty("queue_offset", r.getQueueOffset());
            s.addProperty("msg_id", r.getOffsetMsgId());
            s.addProperty("uniq_key", r.getMsgId());
            sent.add(s);
            index++;
        }
        await("messages dispatched to the consume queues", () -> {
            for (JsonObject s : sent) {
                try {
                    if (broker.getMessageStore().getMaxOffsetInQueue(s.get("topic").getAsString(),
                        s.get("queue_id").getAsInt()) <= s.get("queue_offset").getAsLong()) {
                        return false;
                    }
                } catch (Exception ex) {
                    return false;
                }
            }
            return true;
        });
        for (JsonObject s : sent) {
            s.addProperty("store_timestamp", broker.getMessageStore().getMessageStoreTimeStamp(
                s.get("topic").getAsString(), s.get("queue_id").getAsInt(), s.get("queue_offset").getAsLong()));
        }
    }

    // ---- consuming to the end ----

    private long maxOffset(MessageQueue q) {
        try {
            return broker.getMessageStore().getMaxOffsetInQueue(q.getTopic(), q.getQueueId());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private boolean consumedToEnd(DefaultMQPushConsumer c) {
        for (MessageQueue q : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            if (q.getTopic().startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
                continue;
            }
            long offset = c.getDefaultMQPushConsumerImpl().getOffsetStore().readOffset(q, ReadOffsetType.READ_FROM_MEMORY);
            if (offset < maxOffset(q)) {
                lagging = c.buildMQClientId() + " " + q + " at " + offset + " of " + maxOffset(q);
                return false;
            }
        }
        return true;
    }

    private void consumeToEnd() throws Exception {
        await("every assigned queue consumed to its max offset",
            () -> pushConsumers.stream().allMatch(this::consumedToEnd));
        for (DefaultMQPushConsumer c : pushConsumers) {
            if (c.getMessageModel() != MessageModel.CLUSTERING) {
                continue;
            }
            c.getDefaultMQPushConsumerImpl().persistConsumerOffset();
            String group = c.getConsumerGroup();
            for (MessageQueue q : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
                long want = c.getDefaultMQPushConsumerImpl().getOffsetStore().readOffset(q, ReadOffsetType.READ_FROM_MEMORY);
                await("broker holds " + group + "'s offset of " + q, () -> {
                    c.getDefaultMQPushConsumerImpl().persistConsumerOffset();
                    return broker.getConsumerOffsetManager().queryOffset(group, q.getTopic(), q.getQueueId()) == want;
                });
            }
        }
    }

    // ---- raw pulls and time queries ----

    private DefaultMQPullConsumer pullConsumer(String group) throws Exception {
        DefaultMQPullConsumer c = pullConsumers.get(group);
        if (c == null) {
            c = new DefaultMQPullConsumer(group);
            c.setNamesrvAddr(nsAddr);
            c.setClientIP("127.0.0.1");
            c.setInstanceName("harness-puller-" + pullConsumers.size() + "-" + System.nanoTime());
            c.setVipChannelEnabled(false);
            c.start();
            pullConsumers.put(group, c);
            // SQL92 pulls need the broker's version, which the client learns from a heartbeat,
            // which goes only to brokers of a topic whose route it holds.
            final DefaultMQPullConsumer pc = c;
            final MQClientInstance factory = MQClientManager.getInstance().getOrCreateMQClientInstance(pc);
            for (JsonElement t : scenario.getAsJsonArray("topics")) {
                factory.updateTopicRouteInfoFromNameServer(t.getAsJsonObject().get("name").getAsString());
            }
            await("pull consumer " + group + " knows the broker's version", () -> {
                factory.sendHeartbeatToAllBrokerWithLock();
                org.apache.rocketmq.client.impl.FindBrokerResult found =
                    factory.findBrokerAddressInSubscribe(brokerName, MixAll.MASTER_ID, true);
                return found != null && found.getBrokerVersion() > 0;
            });
        }
        return c;
    }

    private List<JsonObject> pulls() throws Exception {
        List<JsonObject> out = new ArrayList<>();
        if (!scenario.has("pulls")) {
            return out;
        }
        for (JsonElement e : scenario.getAsJsonArray("pulls")) {
            JsonObject p = e.getAsJsonObject().deepCopy();
            DefaultMQPullConsumer c = pullConsumer(p.get("group").getAsString());
            MessageQueue mq = new MessageQueue(p.get("topic").getAsString(), brokerName, p.get("queue_id").getAsInt());
            String type = str(p, "type", "TAG");
            String expr = p.get("expression").getAsString();
            MessageSelector selector = type.equals("TAG") ? MessageSelector.byTag(expr) : MessageSelector.bySql(expr);
            try {
                PullResult r = c.pull(mq, selector, p.get("offset").getAsLong(), p.get("max_msg_nums").getAsInt(), RPC_TIMEOUT_MS);
                p.addProperty("status", r.getPullStatus().name());
                p.addProperty("next_begin_offset", r.getNextBeginOffset());
                p.addProperty("min_offset", r.getMinOffset());
                p.addProperty("max_offset", r.getMaxOffset());
                JsonArray found = new JsonArray();
                if (r.getMsgFoundList() != null) {
                    r.getMsgFoundList().forEach(m -> found.add(m.getQueueOffset()));
                }
                p.add("found_offsets", found);
            } catch (MQBrokerException ex) {
                // The broker refused the pull (e.g. a selector that does not compile): its response code.
                p.addProperty("status", "BROKER_ERROR");
                p.addProperty("response_code", ex.getResponseCode());
                p.addProperty("error", ex.getErrorMessage());
            }
            out.add(p);
        }
        return out;
    }

    /**
     * What each consumer's own subscription wants, as the broker and client answer it: every queue
     * of each subscribed topic pulled from its min offset to its max with that subscription (the
     * broker's filter, then the client's exact tag re-check), by a group of its own.
     */
    private List<JsonObject> wants() throws Exception {
        List<JsonObject> out = new ArrayList<>();
        DefaultMQPullConsumer c = pullConsumer("GID_rocketfilter_harness_wants");
        for (JsonElement ge : groups()) {
            JsonObject g = ge.getAsJsonObject();
            for (JsonElement ce : g.getAsJsonArray("consumers")) {
                JsonObject consumer = ce.getAsJsonObject();
                for (Map.Entry<String, JsonElement> s : consumer.getAsJsonObject("subscriptions").entrySet()) {
                    JsonObject sub = s.getValue().getAsJsonObject();
                    String expr = sub.get("expression").getAsString();
                    MessageSelector selector = str(sub, "type", "TAG").equals("TAG")
                        ? MessageSelector.byTag(expr) : MessageSelector.bySql(expr);
                    for (MessageQueue mq : queuesOf(s.getKey())) {
                        long offset = broker.getMessageStore().getMinOffsetInQueue(mq.getTopic(), mq.getQueueId());
                        long max = maxOffset(mq);
                        while (offset < max) {
                            PullResult r = c.pull(mq, selector, offset, 32, RPC_TIMEOUT_MS);
                            if (r.getMsgFoundList() != null) {
                                for (MessageExt m : r.getMsgFoundList()) {
                                    JsonObject w = new JsonObject();
                                    w.addProperty("group", g.get("name").getAsString());
                                    w.addProperty("client_id", consumer.get("client_id").getAsString());
                                    w.addProperty("topic", m.getTopic());
                                    w.addProperty("queue_id", m.getQueueId());
                                    w.addProperty("queue_offset", m.getQueueOffset());
                                    out.add(w);
                                }
                            }
                            check(r.getNextBeginOffset() > offset, "wants pull of " + mq + " at " + offset + ": " + r);
                            offset = r.getNextBeginOffset();
                        }
                    }
                }
            }
        }
        return out;
    }

    private List<JsonObject> timeQueries() throws Exception {
        List<JsonObject> out = new ArrayList<>();
        if (!scenario.has("time_queries")) {
            return out;
        }
        for (JsonElement e : scenario.getAsJsonArray("time_queries")) {
            JsonObject t = e.getAsJsonObject().deepCopy();
            long ts = sent.get(t.get("timestamp_of_message").getAsInt()).get("store_timestamp").getAsLong()
                + (t.has("delta_ms") ? t.get("delta_ms").getAsLong() : 0);
            MessageQueue mq = new MessageQueue(t.get("topic").getAsString(), brokerName, t.get("queue_id").getAsInt());
            long offset = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQAdminImpl()
                .searchOffset(mq, ts, BoundaryType.valueOf(str(t, "boundary", "LOWER")));
            t.addProperty("timestamp", ts);
            t.addProperty("offset", offset);
            out.add(t);
        }
        return out;
    }

    // ---- shutdown and output ----

    /** Clients first: their shutdown persists offsets and unregisters, as an application's would. */
    private void shutdownClients() {
        // In parallel: each client's shutdown is mostly waiting for its own threads.
        List<Thread> threads = new ArrayList<>();
        List<Step> steps = new ArrayList<>();
        pushConsumers.forEach(c -> steps.add(c::shutdown));
        pullConsumers.values().forEach(c -> steps.add(c::shutdown));
        if (producer != null) {
            steps.add(producer::shutdown);
        }
        for (Step step : steps) {
            Thread t = new Thread(() -> quietly(step));
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private List<JsonObject> sortedDeliveries() {
        List<JsonObject> out = new ArrayList<>(deliveries);
        out.sort(Comparator.comparing((JsonObject d) -> d.get("group").getAsString())
            .thenComparing(d -> d.get("client_id").getAsString())
            .thenComparing(d -> d.get("topic").getAsString())
            .thenComparingInt(d -> d.get("queue_id").getAsInt())
            .thenComparingLong(d -> d.get("queue_offset").getAsLong()));
        return out;
    }

    private void writeLines(String name, List<JsonObject> rows) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (JsonObject r : rows) {
            sb.append(GSON.toJson(r)).append('\n');
        }
        Files.writeString(outdir.resolve(name), sb.toString(), StandardCharsets.UTF_8);
    }

    // ---- helpers ----

    private long phaseStart = System.nanoTime();

    private void phase(String name) {
        long now = System.nanoTime();
        if (System.getProperty("rocketfilter.harness.timings") != null) {
            System.err.printf("harness: %s: %s %.2f s%n", scenarioFile.getFileName(), name, (now - phaseStart) / 1e9);
        }
        phaseStart = now;
    }

    private interface Step {
        void run() throws Exception;
    }

    private static void quietly(Step s) {
        try {
            s.run();
        } catch (Exception e) {
            System.err.println("harness: shutdown: " + e);
        }
    }

    private static String str(JsonObject o, String key, String def) {
        return o.has(key) && !o.get(key).isJsonNull() ? o.get(key).getAsString() : def;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " failed");
        }
    }

    /** Polls a condition; no speed is assumed. After ten minutes it gives up, naming what it waited for. */
    private void await(String what, BooleanSupplier condition) throws InterruptedException {
        long start = System.currentTimeMillis();
        long nextReport = start + 30_000;
        while (!condition.getAsBoolean()) {
            long now = System.currentTimeMillis();
            if (now > start + 600_000) {
                throw new IllegalStateException(scenarioFile + ": still waiting after 10 minutes for: " + what);
            }
            if (now > nextReport) {
                System.err.println("harness: " + scenarioFile + ": still waiting for " + what + " " + lagging);
                nextReport = now + 30_000;
            }
            Thread.sleep(10);
        }
    }
}
